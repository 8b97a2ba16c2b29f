// A worker process stopped by SIGTERM mid-job: the job is finished or
// handed back, never lost.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "../src/index.js";
import { RotaServer, uniq, until } from "./helpers.js";

// Plain JS importing the compiled package; tsc copies it to build/test/fixtures.
const fixture = join(fileURLToPath(new URL(".", import.meta.url)), "fixtures", "worker.mjs");

let server: RotaServer;
let c: Client;
before(async () => {
  server = await RotaServer.start();
  c = server.client();
});
after(async () => {
  c.close();
  await server.close();
});

/** stopMidJob starts a worker process, waits until it runs every job, sends SIGTERM, and answers its exit. */
async function stopMidJob(type: string, mode: string, jobs: number): Promise<{ code: number | null; out: string }> {
  const p = spawn(process.execPath, [fixture, type, mode], { env: { ...process.env, ROTA_SERVER: server.url }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  p.stdout.on("data", (d) => (out += d));
  p.stderr.on("data", (d) => (out += d));
  await until("the jobs to start", () => (out.match(/started/g)?.length ?? 0) >= jobs, 10000);
  const exited = new Promise<number | null>((r) => p.once("exit", r));
  p.kill("SIGTERM");
  return { code: await exited, out };
}

test("SIGTERM mid-job: a job that ends within the shutdown timeout completes", async () => {
  const type = uniq("term");
  const jobs = await c.addMany([{ type }, { type }]);
  const { code, out } = await stopMidJob(type, "300", 2);
  assert.equal(code, 0, out);
  assert.match(out, /stopped/);
  for (const j of jobs) {
    const got = await c.get(j.id);
    assert.equal(got.state, "completed", JSON.stringify(got));
    assert.deepEqual(got.result, { done: j.id });
  }
});

test("SIGTERM mid-job: a job that outlasts the shutdown timeout is handed back, its attempt given back, and runs again", async () => {
  const type = uniq("hang");
  const [j] = await c.addMany([{ type }]);
  const { code, out } = await stopMidJob(type, "hang", 1);
  assert.equal(code, 0, out);
  // After the shutdown timeout the handler's signal aborted, and its throw
  // handed the job back (not the grace period's last resort).
  assert.match(out, /aborted ShutdownError/);
  const back = await c.get(j.id);
  assert.equal(back.state, "pending", JSON.stringify(back));
  assert.equal(back.attempt, 0);
  // Another worker finishes it.
  const [again] = await c.accept({ types: [type], limit: 1 });
  assert.equal(again.id, j.id);
  await c.finish([{ id: j.id, token: again.token!, as: "complete" }]);
  assert.equal((await c.get(j.id)).state, "completed");
});
