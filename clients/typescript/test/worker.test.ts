// The Worker against a real `rota serve`.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  CanceledError,
  Client,
  LeaseLostError,
  Worker,
  WorkerConflictError,
  cancelJob,
  permanent,
  snooze,
  type FinishReport,
  type Job,
} from "../src/index.js";
import { RotaServer, stores, uniq, until } from "./helpers.js";

const quiet = { info() {}, warn() {}, error() {} };

/** running starts w and answers a function that stops it and waits. */
function running(w: Worker): () => Promise<void> {
  const ac = new AbortController();
  const done = w.run({ signal: ac.signal, handleSignals: false });
  return async () => {
    ac.abort();
    await done;
  };
}

for (const store of stores()) {
  describe(`Worker on ${store}`, () => {
    let server: RotaServer;
    let c: Client;
    before(async () => {
      server = await RotaServer.start({ store });
      c = server.client();
    });
    after(async () => {
      c.close();
      await server.close();
    });

    test("runs each job once, with its result, leasing ahead and finishing in batches", async () => {
      const type = uniq("drain");
      const jobs = await c.addMany(Array.from({ length: 600 }, (_, i) => ({ type, group: `g${i % 5}`, data: { i } })));
      // Count the worker's requests: it accepts many jobs at once and
      // finishes them in shared requests.
      const counting = server.client();
      let accepts = 0;
      let finishes = 0;
      const accept = counting.accept.bind(counting);
      const finish = counting.finish.bind(counting);
      counting.accept = (...a) => (accepts++, accept(...a));
      counting.finish = (...a) => (finishes++, finish(...a));
      const w = new Worker(counting, { concurrency: 8, logger: quiet });
      const ran = new Map<number, number>();
      w.handle(type, async (job: Job) => {
        ran.set(job.id, (ran.get(job.id) ?? 0) + 1);
        return { double: (job.data.i as number) * 2 };
      });
      const stop = running(w);
      await until("the drain", async () => (await c.stats()).counts.filter((x) => x.type === type && x.state === "completed").reduce((n, x) => n + x.jobs, 0) === 600, 30000);
      await stop();
      assert.equal(ran.size, 600);
      assert.ok([...ran.values()].every((n) => n === 1));
      const last = await c.get(jobs[599].id);
      assert.deepEqual(last.result, { double: 1198 });
      assert.ok(accepts < 600 / 4, `${accepts} accepts for 600 jobs`);
      assert.ok(finishes < 600 / 4, `${finishes} finish requests for 600 jobs`);
      counting.close();
    });

    if (store === "postgres") return; // the rest are the worker's own rules, on one store

    test("throwing fails the attempt; permanent fails for good; snooze and cancelJob", async () => {
      const type = uniq("outcomes");
      const retried = await c.add({ type, data: { do: "throw" }, max_attempts: 2, backoff_base: "10ms", backoff_max: "10ms" });
      const perm = await c.add({ type, data: { do: "permanent" } });
      const snoozed = await c.add({ type, data: { do: "snooze" } });
      const cancelled = await c.add({ type, data: { do: "cancel" } });
      const w = new Worker(c, { concurrency: 4, logger: quiet });
      const reports: FinishReport[] = [];
      w.on("finish", (r: FinishReport) => reports.push(r));
      w.handle(type, async (job) => {
        switch (job.data.do) {
          case "throw":
            throw new Error(`attempt ${job.attempt} broke`);
          case "permanent":
            throw permanent(new Error("bad input, do not retry"));
          case "snooze":
            throw snooze(60_000);
          case "cancel":
            throw cancelJob("not wanted any more");
        }
      });
      const stop = running(w);
      const r = await c.wait(retried.id);
      assert.equal(r.state, "failed");
      assert.equal(r.attempt, 2);
      assert.deepEqual(r.errors?.map((e) => e.error), ["attempt 1 broke", "attempt 2 broke"]);
      const p = await c.wait(perm.id);
      assert.equal(p.state, "failed");
      assert.equal(p.attempt, 1);
      assert.match(p.last_error ?? "", /bad input/);
      assert.equal((await c.wait(cancelled.id)).state, "cancelled");
      const s = await until("the snooze", async () => {
        const j = await c.get(snoozed.id);
        return j.state === "pending" && j.attempt === 0 ? j : undefined; // the attempt is given back
      });
      assert.ok(Date.parse(s.run_at) > Date.now() + 50_000);
      await stop();
      assert.ok(reports.some((x) => x.job.id === snoozed.id && x.as === "snooze" && !x.error));
    });

    test("a job cancelled while it runs: the handler's signal aborts with CanceledError", async () => {
      const type = uniq("cancelme");
      const j = await c.add({ type });
      const w = new Worker(c, { concurrency: 1, logger: quiet });
      let reason: unknown;
      let started!: () => void;
      const isRunning = new Promise<void>((r) => (started = r));
      w.handle(type, (_job, ctx) => {
        started();
        return new Promise((_, reject) =>
          ctx.signal.addEventListener("abort", () => {
            reason = ctx.signal.reason;
            reject(ctx.signal.reason);
          }),
        );
      });
      const reports: FinishReport[] = [];
      w.on("finish", (r: FinishReport) => reports.push(r));
      const stop = running(w);
      await isRunning;
      await c.cancel(j.id);
      await until("the abort", () => reason);
      assert.ok(reason instanceof CanceledError);
      await until("the report", () => reports.length === 1);
      assert.equal(reports[0].as, "abandon");
      await stop();
      assert.equal((await c.get(j.id)).state, "cancelled");
    });

    test("heartbeats keep a lease that is shorter than the job; progress reaches the server", async () => {
      const type = uniq("long");
      await c.setType({ type, lease_timeout: "1s" });
      const j = await c.add({ type });
      const w = new Worker(c, { concurrency: 1, logger: quiet });
      w.handle(type, async (_job, ctx) => {
        await new Promise((r) => setTimeout(r, 1200));
        await ctx.progress(50);
        await new Promise((r) => setTimeout(r, 1200));
        if (ctx.signal.aborted) throw ctx.signal.reason;
        return { ok: true };
      });
      const seen = c.wait(j.id);
      const stop = running(w);
      await until("progress", async () => (await c.get(j.id)).progress === 50, 5000);
      const done = await seen;
      await stop();
      assert.equal(done.state, "completed");
      assert.equal(done.attempt, 1); // never taken back
      assert.deepEqual(done.result, { ok: true });
    });

    test("a lease that runs out while the handler holds the thread: the job is abandoned, not finished, and runs again", async () => {
      const type = uniq("lost");
      await c.setType({ type, lease_timeout: "1s" });
      const j = await c.add({ type });
      const w = new Worker(c, { concurrency: 1, logger: quiet });
      let runs = 0;
      w.handle(type, () => {
        runs++;
        if (runs === 1) {
          // Hold the thread past the lease: no heartbeat goes out, and the
          // server takes the job back.
          const end = Date.now() + 2500;
          while (Date.now() < end);
        }
        return { run: runs };
      });
      const reports: FinishReport[] = [];
      w.on("finish", (r: FinishReport) => reports.push(r));
      const stop = running(w);
      const done = await c.wait(j.id);
      await stop();
      assert.equal(done.state, "completed");
      assert.equal(done.attempt, 2);
      assert.deepEqual(done.result, { run: 2 });
      // The worker knew by its clock that the lease had run out: it sent no finish.
      assert.equal(reports[0].as, "abandon");
      assert.ok(reports[0].error instanceof LeaseLostError);
    });

    test("a run past its job's timeout is ended by the server while the worker heartbeats: the handler's signal aborts, the attempt fails as timed out", async () => {
      const type = uniq("timeout");
      const j = await c.add({ type, timeout: "1s", max_attempts: 2, backoff_base: "10ms", backoff_max: "10ms" });
      assert.equal(j.timeout, "1s");
      const w = new Worker(c, { concurrency: 1, logger: quiet });
      let runs = 0;
      w.handle(type, async (_job: Job, ctx) => {
        runs++;
        if (runs === 1) {
          // Wait, heartbeating, until told the run is over (or far past it).
          await new Promise<void>((resolve) => {
            const t = setTimeout(resolve, 10000);
            ctx.signal.addEventListener("abort", () => (clearTimeout(t), resolve()), { once: true });
          });
          assert.ok(ctx.signal.aborted, "the handler's signal did not abort at the timeout");
        }
        return { run: runs };
      });
      const reports: FinishReport[] = [];
      w.on("finish", (r: FinishReport) => reports.push(r));
      const stop = running(w);
      const done = await c.wait(j.id);
      await stop();
      assert.equal(done.state, "completed");
      assert.equal(done.attempt, 2);
      assert.deepEqual(done.result, { run: 2 });
      assert.deepEqual(
        (done.errors ?? []).map((e) => e.error),
        ["timed out after 1s"],
      );
      assert.equal(reports[0].as, "abandon");
    });

    test("a lease lost mid-run unknown to the worker (the process stalled): the stale finish is refused and reported", async () => {
      const type = uniq("stale");
      await c.setType({ type, lease_timeout: "1s" });
      const j = await c.add({ type });
      const w = new Worker(c, { concurrency: 1, logger: quiet });
      let runs = 0;
      w.handle(type, async () => {
        runs++;
        if (runs === 1) {
          // The whole process stalls (a long GC pause, a stopped VM) past the
          // lease, at the handler's end: it returns before the worker's next
          // heartbeat or event could tell it the lease is gone.
          await new Promise((r) => setTimeout(r, 100));
          const end = Date.now() + 2500;
          while (Date.now() < end);
        }
        return { run: runs };
      });
      const reports: FinishReport[] = [];
      w.on("finish", (r: FinishReport) => reports.push(r));
      const stop = running(w);
      const done = await c.wait(j.id);
      await until("both reports", () => reports.length >= 2);
      await stop();
      assert.equal(done.state, "completed");
      assert.equal(done.attempt, 2);
      assert.deepEqual(done.result, { run: 2 });
      assert.equal(reports[0].as, "complete");
      assert.ok(reports[0].error instanceof WorkerConflictError, String(reports[0].error));
      assert.equal(reports[1].error, undefined);
    });

    test("a finish that cannot reach the server is tried again while the lease holds", async () => {
      const type = uniq("retry");
      const j = await c.add({ type });
      const w = new Worker(c, { concurrency: 1, logger: quiet });
      let release!: () => void;
      let started!: () => void;
      const isRunning = new Promise<void>((r) => (started = r));
      w.handle(type, () => {
        started();
        return new Promise((r) => (release = () => r({ late: true })));
      });
      const stop = running(w);
      await isRunning;
      await server.stop("SIGKILL"); // the server dies with the job leased
      release(); // the handler ends while no server answers
      await new Promise((r) => setTimeout(r, 700));
      await server.restart();
      const done = await c.wait(j.id);
      await stop();
      assert.equal(done.state, "completed");
      assert.equal(done.attempt, 1);
      assert.deepEqual(done.result, { late: true });
    });

    test("a handler's ctx.log is kept with its job's attempt, sent while it runs and before it finishes, bounded", async () => {
      const type = uniq("logs");
      const seen: string[] = [];
      const logger = { info: (m: string) => seen.push(m), warn: (m: string) => seen.push(m), error: (m: string) => seen.push(m) };
      const w = new Worker(c, { concurrency: 2, logger });
      let release!: () => void;
      const released = new Promise<void>((r) => (release = r));
      w.handle(type, async (job: Job, ctx) => {
        ctx.log.debug("not kept");
        ctx.log.info("fetching", { items: 3 });
        if (job.attempt === 1) {
          await released; // the record is sent while the job runs
          ctx.log.error("bad \u0000 byte");
          throw new Error("first try fails");
        }
        for (let i = 0; i < 1000; i++) ctx.log.info(`line ${i} ${"x".repeat(100)}`);
        return { ok: true };
      });
      const job = await c.add({ type, max_attempts: 2, backoff_base: "10ms", backoff_max: "10ms" });
      const stop = running(w);
      try {
        await until("the running job's record", async () => (await c.logs(job.id)).records.length === 1);
        release();
        await until("the job completed", async () => (await c.get(job.id)).state === "completed");
      } finally {
        await stop();
      }
      const first = await c.logs(job.id, { attempt: 1 });
      assert.deepEqual(
        first.records.map((r) => [r.level, r.message, r.attrs]),
        [
          ["INFO", "fetching", { items: 3 }],
          ["ERROR", "bad \uFFFD byte", undefined],
        ],
      );
      const latest = await c.logs(job.id, { limit: 2 });
      assert.equal(latest.attempt, 2);
      assert.equal(latest.next, 2);
      const a2 = latest.attempts.find((a) => a.attempt === 2)!;
      assert.ok(a2.dropped > 0 && a2.records + a2.dropped === 1001 && a2.bytes <= 64 << 10, JSON.stringify(a2));
      assert.ok(seen.some((m) => m.endsWith(`job ${job.id} (${type}): fetching`)), seen.slice(0, 3).join("\n"));
      await assert.rejects(c.appendLogs(job.id, { token: "stale", records: [{ level: "INFO", message: "late" }] }), WorkerConflictError);
    });
  });
}
