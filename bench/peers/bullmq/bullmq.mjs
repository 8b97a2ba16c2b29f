// BullMQ, a peer of rota in bench/peers: one run of the drain or the
// steady workload on a Redis server, printing one JSON line as the Go
// peers do (and as `rota bench --json` does).
//
//   node bullmq.mjs -redis 127.0.0.1:6379 -mode drain -n 20000 -concurrency 100
//   node bullmq.mjs -redis 127.0.0.1:6379 -mode steady -rate 500 -duration 15s -warmup 1s
//
// drain: -n no-op jobs added with addBulk (not timed), the append-only file
// rewritten, then a Worker started with the clock, timed until its
// "completed" event (the job moved to completed in Redis) has come for
// every job. steady: jobs added one at a time at -rate a second for
// -duration after -warmup, an open loop (each add sent when the clock says,
// whether or not earlier ones were answered), by a Queue on a thread of its
// own (a producer sharing the Worker's event loop would delay both); the
// latency from the add call to the handler's start and to the "completed"
// event, and of the add call itself.
import { readFileSync } from "node:fs";
import { Worker as Thread, isMainThread, parentPort, workerData } from "node:worker_threads";
import { Queue, Worker } from "bullmq";
import IORedis from "ioredis";

const args = process.argv.slice(2);
const flag = (name, def) => {
  const i = args.indexOf(`-${name}`);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : def;
};
const duration = (s) => {
  const m = /^([0-9.]+)(ms|s|m)$/.exec(s);
  if (!m) throw new Error(`bad duration ${JSON.stringify(s)}: want e.g. 500ms, 15s, 1m`);
  return Number(m[1]) * { ms: 1, s: 1000, m: 60000 }[m[2]];
};
const [host, port] = flag("redis", "127.0.0.1:6379").split(":");
const mode = flag("mode", "drain");
const jobs = Number(flag("n", "20000"));
const concurrency = Number(flag("concurrency", "100"));
const rate = Number(flag("rate", "500"));
const measureMs = duration(flag("duration", "15s"));
const warmupMs = duration(flag("warmup", "1s"));
if (!["drain", "steady"].includes(mode)) throw new Error(`-mode ${mode}: want drain or steady`);
if (!(jobs > 0 && concurrency > 0 && rate > 0)) throw new Error("-n, -concurrency and -rate must be positive");

const connection = { host, port: Number(port), maxRetriesPerRequest: null };
const name = "peer";
// Completed jobs are removed, as a drain of no-op jobs would be run in
// production: keeping them would only grow Redis.
const defaultJobOptions = { removeOnComplete: true, removeOnFail: false };
const version = JSON.parse(readFileSync(new URL("./node_modules/bullmq/package.json", import.meta.url))).version;

// now is a monotonic clock in ms, sub-ms precise, the same on every thread.
const now = () => Number(process.hrtime.bigint()) / 1e6;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// timeout resolves to null after ms, without keeping the process alive.
const timeout = (ms) => new Promise((r) => setTimeout(() => r(null), ms).unref());
const round = (v, d) => Math.round(v * 10 ** d) / 10 ** d;
const pct = (xs, ...qs) => {
  const s = [...xs].sort((a, b) => a - b);
  return qs.map((q) => (s.length ? s[Math.max(0, Math.min(s.length - 1, Math.ceil(q * s.length) - 1))] : 0));
};
const info = (text, field) => (text.split("\n").find((l) => l.startsWith(field + ":")) || "").slice(field.length + 1).trim();

// pressure is the machine's CPU stall total (µs, PSI "some"), or null.
function pressure() {
  try {
    const some = readFileSync("/proc/pressure/cpu", "utf8").split("\n").find((l) => l.startsWith("some "));
    return { stall: Number(/total=(\d+)/.exec(some)[1]), at: now() };
  } catch {
    return null;
  }
}
const pressureSince = (p0) => {
  const p1 = pressure();
  return p0 && p1 && p1.at > p0.at ? (p1.stall - p0.stall) / ((p1.at - p0.at) * 1000) : 0;
};
// procCPU is a process's CPU time in µs (USER_HZ 100), or null.
function procCPU(pid) {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) * 10000;
  } catch {
    return null;
  }
}
const selfCPU = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

// The steady workload's producer thread: adds at the open loop's times,
// then posts the measured adds' latencies and the measured span's start.
if (!isMainThread) {
  const { interval, warm, total } = workerData;
  const queue = new Queue(name, { connection, defaultJobOptions });
  await queue.waitUntilReady();
  const adds = [];
  const addLat = [];
  const begin = now();
  let measuredBegin = begin;
  for (let i = 0; i < total; i++) {
    const d = begin + i * interval - now();
    if (d > 1) await sleep(d);
    const measured = i >= warm;
    if (i === warm) {
      measuredBegin = now();
      parentPort.postMessage({ measuring: true });
    }
    const t = now();
    adds.push(
      queue.add("peer_steady", { t, m: measured }).then(() => {
        if (measured) addLat.push(now() - t);
      }),
    );
  }
  const sent = (now() - measuredBegin) / 1000;
  await Promise.all(adds);
  await queue.close();
  parentPort.postMessage({ addLat, sent, measuredBegin });
  process.exit(0);
}

const rdb = new IORedis(connection);
await rdb.flushdb();
const serverInfo = await rdb.info("server");
const r = {
  system: "bullmq", store: "redis", workers: concurrency, version,
  store_version: info(serverInfo, "redis_version"), node: process.version,
};
for (const k of ["appendonly", "appendfsync"]) {
  const [, v] = await rdb.config("GET", k);
  r[k] = v;
}
const serverPID = Number(info(serverInfo, "process_id"));
const queue = new Queue(name, { connection, defaultJobOptions });
await queue.waitUntilReady();

// rewriteAOF compacts the append-only file and waits for the rewrite to
// end, so that an automatic rewrite is unlikely during the measurement.
async function rewriteAOF() {
  if (r.appendonly !== "yes") return;
  for (let i = 0; ; i++) {
    try {
      await rdb.bgrewriteaof();
      break;
    } catch (err) {
      if (i > 100) throw err; // a rewrite or a save already running
      await sleep(100);
    }
  }
  for (const deadline = Date.now() + 120000; Date.now() < deadline; await sleep(50)) {
    const p = await rdb.info("persistence");
    if (info(p, "aof_rewrite_in_progress") === "0" && info(p, "aof_rewrite_scheduled") === "0") return;
  }
  throw new Error("the AOF rewrite did not finish");
}

async function drain() {
  const fill0 = now();
  for (let i = 0; i < jobs; i += 1000) {
    const batch = [];
    for (let k = i; k < Math.min(i + 1000, jobs); k++) batch.push({ name: "peer_noop", data: { num: k } });
    await queue.addBulk(batch);
  }
  const fill = (now() - fill0) / 1000;
  await rewriteAOF();
  const server0 = procCPU(serverPID);
  const psi0 = pressure();
  const cpu0 = selfCPU();
  const begin = now();
  let done = 0;
  let finished;
  const all = new Promise((res) => (finished = res));
  const worker = new Worker(name, async () => undefined, { connection, concurrency, autorun: false });
  worker.on("completed", () => {
    if (++done === jobs) finished(now());
  });
  worker.on("failed", (job, err) => console.error(`job ${job?.id} failed: ${err}`));
  worker.run();
  const end = await Promise.race([all, timeout(600000)]);
  if (end === null) throw new Error(`drain: ${done} of ${jobs} jobs completed in 10 minutes`);
  const elapsed = (end - begin) / 1000;
  const cpu = selfCPU() - cpu0;
  const server1 = procCPU(serverPID);
  const pr = pressureSince(psi0);
  await worker.close();
  const counts = await queue.getJobCounts("wait", "active", "failed", "delayed");
  if (counts.wait || counts.active || counts.failed || counts.delayed) {
    throw new Error(`drain: after it, ${JSON.stringify(counts)}`);
  }
  Object.assign(r, {
    workload: "drain", jobs, seconds: round(elapsed, 4), jobs_per_sec: round(jobs / elapsed, 1),
    fill_seconds: round(fill, 3), cpu_us_per_job: round(cpu / jobs, 2), cpu_pressure: round(pr, 3),
  });
  if (server0 !== null && server1 !== null) r.server_cpu_us_per_job = round((server1 - server0) / jobs, 2);
}

async function steady() {
  const interval = 1000 / rate;
  const warm = Math.round((rate * warmupMs) / 1000);
  const n = Math.round((rate * measureMs) / 1000);
  const total = warm + n;
  const startLat = [];
  const finishLat = [];
  let handled = 0;
  let finished;
  const all = new Promise((res) => (finished = res));
  const worker = new Worker(
    name,
    async (job) => {
      if (job.data.m) startLat.push(now() - job.data.t);
    },
    { connection, concurrency },
  );
  worker.on("completed", (job) => {
    if (job.data.m) finishLat.push(now() - job.data.t);
    if (++handled === total) finished();
  });
  worker.on("failed", (job, err) => console.error(`job ${job?.id} failed: ${err}`));
  await worker.waitUntilReady();
  await sleep(500);
  let psi0 = null;
  const produced = new Promise((res, rej) => {
    const th = new Thread(new URL(import.meta.url), { argv: args, workerData: { interval, warm, total } });
    th.on("message", (m) => {
      if (m.measuring) psi0 = pressure();
      else res(m);
    });
    th.on("error", rej);
    th.on("exit", (code) => code && rej(new Error(`the producer thread exited with ${code}`)));
  });
  const { addLat, sent, measuredBegin } = await produced;
  const ok = await Promise.race([all.then(() => true), timeout(120000)]);
  if (!ok) throw new Error(`steady: ${handled} of ${total} jobs completed two minutes after the last add`);
  const elapsed = (now() - measuredBegin) / 1000;
  const pr = pressureSince(psi0);
  await worker.close();
  const s = pct(startLat, 0.5, 0.99, 0.999, 1);
  const f = pct(finishLat, 0.5, 0.99, 0.999);
  const a = pct(addLat, 0.5, 0.99);
  Object.assign(r, {
    workload: "steady", jobs: n, target_rate: rate, jobs_per_sec: round(n / sent, 1), seconds: round(elapsed, 3),
    p50_ms: round(s[0], 3), p99_ms: round(s[1], 3), p999_ms: round(s[2], 3), max_ms: round(s[3], 3),
    finish_p50_ms: round(f[0], 3), finish_p99_ms: round(f[1], 3), finish_p999_ms: round(f[2], 3),
    add_p50_ms: round(a[0], 3), add_p99_ms: round(a[1], 3), cpu_pressure: round(pr, 3),
  });
  if (startLat.length !== n) r.note = `measured ${startLat.length} starts of ${n}`;
}

try {
  await (mode === "drain" ? drain() : steady());
  process.stdout.write(JSON.stringify(r) + "\n");
} catch (err) {
  console.error(err);
  process.exitCode = 1;
} finally {
  await queue.close();
  rdb.disconnect();
}
