// The README's producer and worker, run as written, from a project that
// installed the package with `npm install <the package's folder>`.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { RotaServer, pkgDir, until } from "./helpers.js";

let server: RotaServer;
let dir: string;
before(async () => {
  server = await RotaServer.start();
  dir = mkdtempSync(join(tmpdir(), "rota-ts-readme-"));
});
after(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

/** snippet is the README's js block whose first line is `// name`. */
function snippet(name: string): string {
  const readme = readFileSync(join(pkgDir, "README.md"), "utf8");
  for (const m of readme.matchAll(/```js\n([\s\S]*?)```/g)) {
    if (m[1].startsWith(`// ${name}\n`)) return m[1];
  }
  throw new Error(`README.md has no js block starting with // ${name}`);
}

test("the README's producer and worker run as written", async () => {
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "readme-check", private: true, type: "module" }));
  await promisify(execFile)("npm", ["install", "--offline", "--no-audit", "--no-fund", pkgDir], { cwd: dir });
  writeFileSync(join(dir, "producer.mjs"), snippet("producer.mjs"));
  writeFileSync(join(dir, "worker.mjs"), snippet("worker.mjs"));
  const env = { ...process.env, ROTA_SERVER: server.url };
  const worker = spawn(process.execPath, ["worker.mjs"], { cwd: dir, env, stdio: ["ignore", "pipe", "pipe"] });
  let wout = "";
  worker.stdout.on("data", (d) => (wout += d));
  worker.stderr.on("data", (d) => (wout += d));
  const { stdout } = await promisify(execFile)(process.execPath, ["producer.mjs"], { cwd: dir, env, timeout: 20000 });
  assert.match(stdout, /^added job (\d+)\njob \1 completed: \{"sent":true\}\n$/);
  await until("the worker's line", () => wout.includes("sending to ada@example.com"));
  const exited = new Promise<number | null>((r) => worker.once("exit", r));
  worker.kill("SIGTERM");
  assert.equal(await exited, 0, wout);
});
