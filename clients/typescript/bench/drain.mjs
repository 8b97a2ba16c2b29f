#!/usr/bin/env node
// Drains no-op jobs through one `rota serve` (SQLite) with the TypeScript
// worker and with the Go remote worker, alternating, and prints each run's
// jobs a second and the medians. Each run adds its jobs first, of a type of
// its own (not timed), then starts the worker process and times until the
// server counts every job completed (process start included: tens of ms).
//
//   node bench/drain.mjs [--jobs 20000] [--runs 3] [--concurrency 512]
//
// It needs build/rota and build/godrain (npm run bench builds them).
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir, cpus } from "node:os";
import { join } from "node:path";
import { createServer } from "node:net";
import { Client } from "../dist/index.js";

const arg = (name, def) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const jobs = arg("jobs", 20000);
const runs = arg("runs", 3);
const concurrency = arg("concurrency", 512);

const port = await new Promise((res) => {
  const s = createServer().listen(0, "127.0.0.1", () => {
    const p = s.address().port;
    s.close(() => res(p));
  });
});
const dir = mkdtempSync(join(tmpdir(), "rota-ts-bench-"));
const url = `http://127.0.0.1:${port}`;
const server = spawn("build/rota", ["serve", "--store", join(dir, "rota.db"), "--http", `127.0.0.1:${port}`, "--ui=false", "--log-level", "error"], { stdio: "inherit" });
const client = new Client({ url });
for (let i = 0; ; i++) {
  try {
    await client.stats();
    break;
  } catch (err) {
    if (i > 200) throw err;
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function drain(kind, run) {
  const type = `bench.${kind}.${run}`;
  for (let i = 0; i < jobs; i += 5000) {
    await client.addMany(Array.from({ length: Math.min(5000, jobs - i) }, () => ({ type })));
  }
  const load = loadavg()[0];
  const start = performance.now();
  const p =
    kind === "ts"
      ? spawn(process.execPath, ["bench/tsworker.mjs", url, type, String(concurrency)], { stdio: "inherit" })
      : spawn("build/godrain", ["-server", url, "-type", type, "-concurrency", String(concurrency)], { stdio: "inherit" });
  for (;;) {
    const s = await client.stats();
    const done = s.counts.filter((c) => c.type === type && c.state === "completed").reduce((n, c) => n + c.jobs, 0);
    if (done === jobs) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const secs = (performance.now() - start) / 1000;
  const exited = new Promise((r) => p.once("exit", r));
  p.kill("SIGTERM");
  await exited;
  return { kind, run, rate: jobs / secs, secs, load };
}

const results = [];
for (let run = 1; run <= runs; run++) {
  const order = run % 2 ? ["ts", "go"] : ["go", "ts"];
  for (const kind of order) {
    const r = await drain(kind, run);
    results.push(r);
    console.log(`run ${run} ${kind}: ${jobs} jobs in ${r.secs.toFixed(2)}s = ${Math.round(r.rate)} jobs/s (load ${r.load.toFixed(2)})`);
  }
}
const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ts = median(results.filter((r) => r.kind === "ts").map((r) => r.rate));
const go = median(results.filter((r) => r.kind === "go").map((r) => r.rate));
// The ratio of each run's pair too: on a shared machine the load moves
// between runs more than between the two drains of one run.
const pairs = [];
for (let run = 1; run <= runs; run++) {
  const [t, g] = ["ts", "go"].map((k) => results.find((r) => r.run === run && r.kind === k).rate);
  pairs.push(t / g);
}
console.log(
  `median: TypeScript worker ${Math.round(ts)} jobs/s, Go remote worker ${Math.round(go)} jobs/s, ratio ${(ts / go).toFixed(2)}; ` +
    `median of the runs' ratios ${median(pairs).toFixed(2)}; ${cpus().length} cores, node ${process.version}`,
);
client.close();
server.kill("SIGTERM");
await new Promise((r) => server.once("exit", r));
rmSync(dir, { recursive: true, force: true });
