// Every Client call against a real `rota serve`, on SQLite and (with
// ROTA_TEST_POSTGRES) on PostgreSQL.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  Client,
  ConnectionError,
  FinishedError,
  InvalidInputError,
  NotFoundError,
  RotaError,
  WorkerConflictError,
  type Event,
} from "../src/index.js";
import { Proxy, RotaServer, stores, uniq, until } from "./helpers.js";

for (const store of stores()) {
  describe(`Client on ${store}`, () => {
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

    test("add returns the job with its id; a keyed re-add updates it", async () => {
      const type = uniq("email");
      const j = await c.add({ type, data: { to: "ada@example.com" }, group: "acme", priority: 3, key: "k1", meta: { route: "eu" } });
      assert.ok(j.id > 0);
      assert.equal(j.outcome, "inserted");
      assert.equal(j.state, "pending");
      assert.deepEqual(j.data, { to: "ada@example.com" });
      assert.equal(j.group, "acme");
      assert.equal(j.priority, 3);
      assert.equal(j.token, undefined);
      const again = await c.add({ type, key: "k1", group: "acme", data: { to: "bob@example.com" } });
      assert.equal((await c.add({ type, key: "k1" })).outcome, "inserted"); // a key is unique within a type and group
      assert.equal(again.id, j.id);
      assert.equal(again.outcome, "updated");
      const later = await c.add({ type, run_at: new Date(Date.now() + 3600_000) });
      assert.ok(Date.parse(later.run_at) > Date.now() + 3500_000);
    });

    test("a batch's callbacks are added once its jobs have ended, and see the batch", async () => {
      const type = uniq("page");
      let b = await c.addBatch({
        jobs: [{ type, data: { n: 1 } }, { type, data: { n: 2 } }],
        on_complete: { type: `${type}.after`, data: { report: "q3" } },
        on_success: { type: `${type}.ok` },
        open: true,
        description: "two pages",
      });
      assert.ok(b.id > 0 && b.open && !b.done);
      assert.equal(b.counts.total, 2);
      assert.deepEqual(b.jobs.map((j) => [j.batch, j.outcome]), [[b.id, "inserted"], [b.id, "inserted"]]);
      b = await c.addBatchJobs(b.id, [{ type }]);
      assert.equal(b.counts.total, 3);
      const closed = await c.closeBatch(b.id);
      assert.ok(!closed.open && !closed.done);
      for (const j of await c.accept({ types: [type], limit: 10 })) await c.finish([{ id: j.id, token: j.token!, as: "complete" }]);
      const done = await c.getBatch(b.id);
      assert.ok(done.done && done.complete_job && done.success_job);
      assert.equal(done.counts.completed, 3);
      const after = await c.get(done.complete_job!);
      const data = after.data as { report: string; batch: { id: number; counts: { completed: number }; callback: string } };
      assert.deepEqual([data.report, data.batch.id, data.batch.counts.completed, data.batch.callback], ["q3", b.id, 3, "complete"]);
      assert.ok((await c.listBatches({ limit: 10 })).batches.some((x) => x.id === b.id));
      await assert.rejects(c.addBatchJobs(b.id, [{ type }]), FinishedError);
      await assert.rejects(c.addBatch({ jobs: [{ type }], on_complete: { type, data: { batch: 1 } } }), InvalidInputError);
      await assert.rejects(c.getBatch(999999), NotFoundError);
    });

    test("an add within a unique window answers with the job it found, outcome unchanged", async () => {
      const type = uniq("unique");
      const first = await c.add({ type, data: { to: "a" }, unique_for: "1h" });
      const again = await c.add({ type, data: { to: "a" }, unique_for: "1h" });
      assert.equal(first.outcome, "inserted");
      assert.deepEqual([again.id, again.outcome], [first.id, "unchanged"]);
      const other = await c.add({ type, data: { to: "a" }, unique_for: "1h", unique_states: ["completed"] });
      assert.ok(other.id !== first.id && other.outcome === "inserted");
      await assert.rejects(c.add({ type, unique_states: ["pending"] }), (e: unknown) => e instanceof InvalidInputError && /unique_states/.test(e.message));
    });

    test("a job whose deadline passes before it starts is ended by the server, cancelled and expired", async () => {
      const type = uniq("deadline");
      const deadline = new Date(Date.now() + 1000);
      const j = await c.add({ type, expires_at: deadline });
      assert.equal(Date.parse(j.expires_at ?? ""), deadline.getTime());
      assert.ok(!j.expired);
      const done = await c.wait(j.id);
      assert.equal(done.state, "cancelled");
      assert.equal(done.expired, true);
      assert.equal(done.attempt, 0);
      assert.match(done.last_error ?? "", /^expired at .*, not started$/);
      const later = new Date(Date.now() + 3600_000);
      await assert.rejects(c.add({ type, run_at: later, expires_at: later }), (e: unknown) => e instanceof InvalidInputError && /expires_at/.test(e.message));
    });

    test("a workflow added in one call waits, runs in order and sees its dependencies' outcomes", async () => {
      const type = uniq("wf");
      const first = await c.add({ type });
      const [mid, last] = await c.addMany([
        { type, key: "mid", after: [first.id] },
        { type, key: "last", after_keys: ["mid"], on_dep_failure: "run" },
      ]);
      assert.equal(mid.state, "waiting");
      assert.equal(last.state, "waiting");
      assert.equal(last.has_deps, true);
      assert.equal(last.on_dep_failure, "run");
      let [run] = await c.accept({ types: [type], limit: 5 });
      assert.equal(run.id, first.id);
      await c.finish([{ id: run.id, token: run.token!, as: "complete", result: { rows: 3 } }]);
      [run] = await c.accept({ types: [type], limit: 5 });
      assert.equal(run.id, mid.id);
      assert.deepEqual(run.deps?.map((d) => [d.id, d.state, d.result]), [[first.id, "completed", { rows: 3 }]]);
      const d = await c.deps(mid.id, { limit: 10 });
      assert.deepEqual(d.deps.map((x) => x.id), [first.id]);
      assert.deepEqual(d.dependants, [last.id]);
      await assert.rejects(c.addMany([{ type, key: "x" }, { type, after: [1e12] }]), NotFoundError);
      assert.equal((await c.list({ type: [type], key: "x" })).jobs.length, 0, "a refused add adds nothing");
    });

    test("a debounced add runs later; another add of the key replaces its data and run time", async () => {
      const type = uniq("debounce");
      const first = await c.add({ type, key: "doc-1", data: { v: 1 }, debounce: "1h" });
      assert.equal(first.outcome, "inserted");
      assert.ok(Date.parse(first.run_at) > Date.now() + 3500_000);
      const again = await c.add({ type, key: "doc-1", data: { v: 2 }, debounce: "1h" });
      assert.deepEqual([again.id, again.outcome, again.data], [first.id, "updated", { v: 2 }]);
      assert.ok(Date.parse(again.run_at) > Date.parse(first.run_at));
      await assert.rejects(c.add({ type, debounce: "1m" }), (e: unknown) => e instanceof InvalidInputError && /debounce needs a key/.test(e.message));
    });

    test("add refuses bad input with InvalidInputError and adds nothing", async () => {
      const type = uniq("bad");
      await assert.rejects(c.add({ type, max_attempts: -1 }), (e: unknown) => {
        assert.ok(e instanceof InvalidInputError && e instanceof RotaError);
        assert.equal(e.code, "invalid_input");
        assert.equal(e.status, 400);
        assert.match(e.message, /max_attempts/);
        return true;
      });
      await assert.rejects(c.add({ type, backoff_base: "soon" }), InvalidInputError);
      assert.deepEqual((await c.list({ type: [type] })).jobs, []);
      await assert.rejects(c.get(0), TypeError);
    });

    test("addMany adds in one transaction, in order: all or none", async () => {
      const type = uniq("batch");
      const jobs = await c.addMany([{ type, data: { n: 1 } }, { type, data: { n: 2 }, group: "g" }]);
      assert.deepEqual(jobs.map((j) => j.data), [{ n: 1 }, { n: 2 }]);
      assert.ok(jobs.every((j) => j.outcome === "inserted" && j.id > 0));
      await assert.rejects(c.addMany([{ type, data: { n: 3 } }, { type: "", data: {} }]), InvalidInputError);
      assert.equal((await c.list({ type: [type] })).jobs.length, 2);
    });

    test("get answers a job, and NotFoundError for none", async () => {
      const type = uniq("get");
      const j = await c.add({ type, data: { a: [1, 2] } });
      const got = await c.get(j.id);
      assert.equal(got.id, j.id);
      assert.deepEqual(got.data, { a: [1, 2] });
      await assert.rejects(c.get(j.id + 1_000_000), (e: unknown) => e instanceof NotFoundError && e.status === 404);
    });

    test("list filters and pages; listAll follows the cursor", async () => {
      const type = uniq("list");
      const added = await c.addMany(Array.from({ length: 7 }, (_, i) => ({ type, group: i % 2 ? "odd" : "even", data: { i } })));
      const page = await c.list({ type: [type], limit: 3 });
      assert.equal(page.jobs.length, 3);
      assert.ok(page.next_cursor);
      const rest = await c.list({ type: [type], limit: 3, cursor: page.next_cursor });
      assert.equal(rest.jobs[0].id, added[3].id);
      const odd = await c.list({ type: [type], group: ["odd"] });
      assert.deepEqual(odd.jobs.map((j) => j.data.i), [1, 3, 5]);
      const all: number[] = [];
      for await (const j of c.listAll({ type: [type], limit: 2 })) all.push(j.id);
      assert.deepEqual(all, added.map((j) => j.id));
      const desc = await c.list({ type: [type], order: "desc", limit: 1 });
      assert.equal(desc.jobs[0].id, added[6].id);
      const byID = await c.list({ id: [added[1].id, added[4].id] });
      assert.deepEqual(byID.jobs.map((j) => j.id).sort(), [added[1].id, added[4].id].sort());
      const pending = await c.list({ type: [type], state: ["pending"], updated_since: new Date(Date.now() - 60_000) });
      assert.equal(pending.jobs.length, 7);
      await assert.rejects(c.list({ type: [type], state: ["nope" as "pending"] }), InvalidInputError);
    });

    test("cancel, resubmit, update and remove", async () => {
      const type = uniq("life");
      const j = await c.add({ type, data: { v: 1 } });
      const updated = await c.update(j.id, { data: { v: 2 }, priority: 9 });
      assert.deepEqual(updated.data, { v: 2 });
      assert.equal(updated.priority, 9);
      const cancelled = await c.cancel(j.id);
      assert.equal(cancelled.state, "cancelled");
      const again = await c.resubmit(j.id, { data: { v: 3 } });
      assert.equal(again.outcome, "requeued");
      assert.equal(again.state, "pending");
      assert.deepEqual(again.data, { v: 3 });
      await c.remove(j.id);
      await assert.rejects(c.get(j.id), NotFoundError);
      await assert.rejects(c.remove(j.id), NotFoundError);
      await assert.rejects(c.cancel(j.id), NotFoundError);
      const running = await c.add({ type });
      const [leased] = await c.accept({ types: [type], limit: 1 });
      await c.finish([{ id: running.id, token: leased.token!, as: "complete" }]);
      await assert.rejects(c.update(running.id, { run_at: new Date() }), FinishedError); // run_at of an ended job
    });

    test("accept, heartbeat and finish by hand; a stale token is refused", async () => {
      const type = uniq("hand");
      const j = await c.add({ type, data: {} });
      const [leased] = await c.accept({ types: [type], limit: 1, worker: "by-hand" });
      assert.equal(leased.id, j.id);
      assert.ok(leased.token);
      const [hb] = await c.heartbeat([{ id: j.id, token: leased.token!, progress: 40 }]);
      assert.equal(hb.error, undefined);
      assert.ok(hb.lease_until);
      assert.equal((await c.get(j.id)).progress, 40);
      const [stale] = await c.finish([{ id: j.id, token: "not-the-token", as: "complete" }]);
      assert.ok(stale instanceof WorkerConflictError);
      const [ok] = await c.finish([{ id: j.id, token: leased.token!, as: "complete", result: { sent: true } }]);
      assert.equal(ok, undefined);
      const done = await c.get(j.id);
      assert.equal(done.state, "completed");
      assert.deepEqual(done.result, { sent: true });
    });

    test("wait answers the job once it ends, and NotFoundError when it is removed", async () => {
      const type = uniq("wait");
      const j = await c.add({ type, data: {} });
      const waiting = c.wait(j.id);
      const [leased] = await c.accept({ types: [type], limit: 1 });
      await c.finish([{ id: j.id, token: leased.token!, as: "fail", error: "boom", permanent: true }]);
      const ended = await waiting;
      assert.equal(ended.state, "failed");
      assert.equal(ended.last_error, "boom");
      const k = await c.add({ type, data: {} });
      const gone = assert.rejects(c.wait(k.id), NotFoundError);
      await new Promise((r) => setTimeout(r, 100));
      await c.remove(k.id);
      await gone;
      const ac = new AbortController();
      const stopped = c.wait((await c.add({ type })).id, { signal: ac.signal });
      ac.abort(new Error("gave up"));
      await assert.rejects(stopped, /gave up/);
    });

    test("wait takes the states to wait for, and FinishedError when the job ends in another", async () => {
      const type = uniq("waitstates");
      const j = await c.add({ type, data: { n: 1 } });
      const running = c.wait(j.id, { states: ["running"] });
      const [leased] = await c.accept({ types: [type], limit: 1 });
      const seen = await running;
      assert.equal(seen.id, j.id);
      assert.deepEqual(seen.data, { n: 1 });
      await c.finish([{ id: j.id, token: leased.token!, as: "complete" }]);
      await assert.rejects(c.wait(j.id, { states: ["running"] }), FinishedError);
      assert.equal((await c.wait(j.id, { states: ["completed", "failed"] })).state, "completed");
    });

    test("stats counts jobs by type, group and state", async () => {
      const type = uniq("stats");
      await c.addMany([{ type, group: "a" }, { type, group: "a" }, { type, group: "b" }]);
      const s = await c.stats();
      const mine = s.counts.filter((x) => x.type === type);
      assert.deepEqual(
        mine.map((x) => [x.group, x.state, x.jobs]),
        [["a", "pending", 2], ["b", "pending", 1]],
      );
      assert.ok(s.by_state.pending >= 3);
      for (const st of ["pending", "running", "paused", "completed", "failed", "cancelled"] as const) {
        assert.equal(typeof s.by_state[st], "number");
      }
    });

    test("types and groups: settings set and read back", async () => {
      const type = uniq("cfg");
      await c.add({ type });
      const set = await c.setType({ type, lease_timeout: "45s", group_max_running: 2, max_running: 5 });
      assert.equal(set.lease_timeout, "45s");
      assert.equal(set.max_running, 5);
      const t = (await c.types()).find((x) => x.type === type);
      assert.equal(t?.group_max_running, 2);
      assert.equal(t?.max_running, 5);
      await assert.rejects(c.setType({ type, max_running: -1 }), InvalidInputError);
      await c.setGroup({ group: "tenant-x", type, weight: 2 });
      assert.ok((await c.groups()).some((g) => g.group === "tenant-x" && g.type === type && g.weight === 2));
      await assert.rejects(c.setType({ type, lease_timeout: "forever" }), InvalidInputError);
      const timed = await c.setType({ type, timeout: "30s" });
      assert.equal(timed.timeout, "30s");
      assert.equal((await c.types()).find((x) => x.type === type)?.timeout, "30s");
      await assert.rejects(c.setType({ type, timeout: "-1s" }), InvalidInputError);
      // Rates of starts, on the type and on a group.
      const rated = await c.setType({ type, rate: "50/s", burst: 80 });
      assert.equal(rated.rate, "50/s");
      assert.equal(rated.burst, 80);
      await c.setGroup({ group: "tenant-x", type, rate: "10/m" });
      assert.ok((await c.groups()).some((g) => g.group === "tenant-x" && g.type === type && g.rate === "10/m"));
      await assert.rejects(c.setType({ type, rate: "5/d" }), InvalidInputError);
    });

    test("subscribe yields each change of the types followed", async () => {
      const type = uniq("sub");
      const sub = c.subscribe({ types: [type] });
      const seen: Event[] = [];
      const reading = (async () => {
        for await (const ev of sub) {
          seen.push(ev);
          if (ev.state === "cancelled") break;
        }
      })();
      await new Promise((r) => setTimeout(r, 500)); // the stream is open
      const j = await c.add({ type });
      await c.cancel(j.id);
      await reading;
      assert.deepEqual(seen.map((e) => [e.id, e.state]), [[j.id, "pending"], [j.id, "cancelled"]]);
      assert.ok(sub.lastEventId && /^\d+$/.test(sub.lastEventId));
    });

    test("subscribe resumes after a dropped connection with Last-Event-ID: the changes made meanwhile come", async () => {
      const type = uniq("drop");
      const proxy = new Proxy(Number(new URL(server.url).port));
      await proxy.start();
      const viaProxy = new Client({ url: `http://127.0.0.1:${proxy.port}` });
      const ac = new AbortController();
      const seen: number[] = [];
      const reading = (async () => {
        for await (const ev of viaProxy.subscribe({ types: [type], signal: ac.signal })) seen.push(ev.id);
      })();
      await new Promise((r) => setTimeout(r, 200));
      const first = await c.add({ type });
      await until("the first event", () => seen.includes(first.id));
      await proxy.cut(); // the connection drops, and no new one gets through
      const whileAway = await c.add({ type }); // not sent live: the stream is down
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(seen, [first.id]);
      await proxy.resume();
      // Replayed from the store after the reconnection, with Last-Event-ID.
      await until("the change made while away", () => seen.includes(whileAway.id));
      assert.deepEqual(seen, [first.id, whileAway.id]);
      ac.abort();
      await reading;
      viaProxy.close();
      await proxy.close();
    });

    test("a new subscription resumes from an earlier one's lastEventId", async () => {
      const type = uniq("resume");
      const a = await c.add({ type });
      const sub = c.subscribe({ types: [type] });
      const reading = (async () => {
        for await (const ev of sub) if (ev.id === a.id && ev.state === "cancelled") break;
      })();
      await new Promise((r) => setTimeout(r, 200));
      await c.cancel(a.id);
      await reading;
      const b = await c.add({ type }); // while nobody listens
      const ids: number[] = [];
      for await (const ev of c.subscribe({ types: [type], lastEventId: sub.lastEventId })) {
        ids.push(ev.id);
        if (ev.id === b.id) break;
      }
      assert.ok(ids.includes(b.id));
    });

    test("subscribe to one job: its state first, and the stream ends after it ends", async () => {
      const type = uniq("one");
      const j = await c.add({ type });
      const states: string[] = [];
      const reading = (async () => {
        for await (const ev of c.subscribe({ job: j.id })) states.push(ev.state);
      })();
      await new Promise((r) => setTimeout(r, 200));
      await c.cancel(j.id);
      await reading; // ends by itself
      assert.deepEqual(states, ["pending", "cancelled"]);
    });

    test("a server that does not answer is a ConnectionError", async () => {
      const nobody = new Client({ url: "http://127.0.0.1:1" });
      await assert.rejects(nobody.stats(), (e: unknown) => e instanceof ConnectionError && /no answer/.test(e.message));
      assert.throws(() => new Client({ url: "ftp://x" }), TypeError);
    });
  });
}
