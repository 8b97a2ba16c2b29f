// Tokens, TLS with a private CA, and the generated types against the
// document the server serves.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  Client,
  ConnectionError,
  ForbiddenError,
  NotFoundError,
  TooManyRequestsError,
  UnauthorizedError,
  UnavailableError,
  Worker,
} from "../src/index.js";
import { RotaServer, makeCA, pkgDir, rota, uniq, until } from "./helpers.js";

describe("tokens", () => {
  const admin = "admin-secret-for-tests";
  let server: RotaServer;
  before(async () => {
    server = await RotaServer.start({ token: admin });
  });
  after(() => server.close());

  test("a token at its bound on requests in flight (429) is TooManyRequestsError, an UnavailableError, and reads wait it out", async () => {
    const bounded = await RotaServer.start({ token: admin, args: ["--max-token-requests", "1"] });
    try {
      const { secret } = await bounded.client().createToken({ name: uniq("one-at-a-time") });
      const holder = bounded.client({ token: secret });
      const reader = bounded.client({ token: secret });
      // The long poll is tried again if the reader's request held the
      // token's one slot when it arrived: which goes first is a race.
      const poll = (async () => {
        for (;;) {
          try {
            return await holder.accept({ types: [uniq("nothing.here")], wait: "1500ms" });
          } catch (e) {
            if (!(e instanceof TooManyRequestsError)) throw e;
          }
        }
      })();
      const refusal = await until("the long poll to hold the token's one request", async () => {
        try {
          await reader.add({ type: uniq("x") });
          return undefined;
        } catch (e) {
          if (e instanceof TooManyRequestsError) return e;
          throw e;
        }
      });
      assert.ok(refusal instanceof UnavailableError && refusal.status === 429 && /requests in flight/.test(refusal.message));
      const started = Date.now();
      await reader.stats(); // tried again after Retry-After until the long poll ends
      assert.ok(Date.now() - started > 300, "the read did not wait");
      await poll;
      holder.close();
      reader.close();
    } finally {
      await bounded.close();
    }
  });

  test("no token is UnauthorizedError; a wrong one ForbiddenError", async () => {
    const none = new Client({ url: server.url });
    await assert.rejects(none.stats(), (e: unknown) => e instanceof UnauthorizedError && e.status === 401);
    const wrong = new Client({ url: server.url, token: "nope" });
    await assert.rejects(wrong.stats(), ForbiddenError);
    none.close();
    wrong.close();
  });

  test("a scoped token made with `rota token create` reaches its groups only, and its worker runs them", async () => {
    const type = uniq("scoped");
    const out = await rota(server, admin, "token", "create", uniq("acme-workers"), "--groups", "acme-*");
    const secret = out.trim().split("\n")[0];
    assert.match(secret, /^rota_/);
    const c = server.client({ token: secret });
    const mine = await c.add({ type, group: "acme-1", data: {} });
    await assert.rejects(c.add({ type, group: "beta" }), (e: unknown) => e instanceof ForbiddenError && /beta/.test(e.message));
    const adminClient = server.client();
    const theirs = await adminClient.add({ type, group: "beta" });
    const listed = await c.list({ type: [type] });
    assert.deepEqual(listed.jobs.map((j) => j.id), [mine.id]);
    await assert.rejects(c.get(theirs.id), NotFoundError); // another tenant's job is not shown to exist
    // Its worker accepts only what it reaches.
    const w = new Worker(c, { concurrency: 2, logger: { info() {}, warn() {}, error() {} } });
    w.handle(type, () => ({ by: "acme" }));
    const ac = new AbortController();
    const run = w.run({ signal: ac.signal, handleSignals: false });
    const done = await c.wait(mine.id);
    ac.abort();
    await run;
    assert.equal(done.state, "completed");
    assert.equal((await adminClient.get(theirs.id)).state, "pending");
    c.close();
    adminClient.close();
  });

  test("a worker whose token the server refuses stops, and run rejects with the refusal's class", async () => {
    const type = uniq("refused");
    for (const [token, cls] of [["nope", ForbiddenError], ["", UnauthorizedError]] as const) {
      const c = new Client({ url: server.url, token });
      const w = new Worker(c, { concurrency: 2, logger: { info() {}, warn() {}, error() {} } });
      w.handle(type, () => undefined);
      const started = Date.now();
      await assert.rejects(w.run({ handleSignals: false }), (e: unknown) => e instanceof cls && /worker stopped/.test((e as Error).message));
      assert.ok(Date.now() - started < 5000, "it stops at once, without retrying");
      c.close();
    }
  });

  test("a job's history names the token of each change; another tenant's token finds no such job", async () => {
    const adminClient = server.client();
    const group = uniq("acme");
    const names = [uniq("alice"), uniq("bob"), uniq("eve")];
    const [alice, bob, eve] = await Promise.all(
      names.map(async (name, i) =>
        server.client({ token: (await adminClient.createToken({ name, groups: [i < 2 ? group : uniq("globex")] })).secret }),
      ),
    );
    const job = await alice.add({ type: uniq("invoice"), group });
    await alice.update(job.id, { priority: 5 });
    await bob.cancel(job.id);
    await adminClient.resubmit(job.id);
    const history = await bob.history(job.id);
    assert.equal(history[0].action, "added");
    assert.deepEqual(
      history.filter((e) => e.audited).map((e) => [e.action, e.actor, e.detail]),
      [
        ["update", names[0], "priority 0 → 5"],
        ["cancel", names[1], "pending → cancelled"],
        ["retry", "admin", "cancelled → pending"],
      ],
    );
    await assert.rejects(eve.history(job.id), NotFoundError);
    for (const c of [alice, bob, eve, adminClient]) c.close();
  });

  test("a read-only token made with createToken reads but changes nothing", async () => {
    const adminClient = server.client();
    const made = await adminClient.createToken({ name: uniq("reader"), read_only: true });
    assert.ok((await adminClient.tokens()).some((t) => t.name === made.token.name && t.read_only));
    const c = server.client({ token: made.secret });
    await c.stats();
    await assert.rejects(c.add({ type: uniq("ro") }), ForbiddenError);
    await adminClient.revokeToken(made.token.name);
    await assert.rejects(c.stats(), ForbiddenError);
    c.close();
    adminClient.close();
  });

  test("a subscription ends with ForbiddenError when its token is revoked", async () => {
    const adminClient = server.client();
    const made = await adminClient.createToken({ name: uniq("watcher"), read_only: true });
    const c = server.client({ token: made.secret });
    const sub = c.subscribe({ types: [uniq("revoked")] });
    const next = sub.next();
    await new Promise((r) => setTimeout(r, 300)); // the stream is open
    await adminClient.revokeToken(made.token.name);
    const started = Date.now();
    await assert.rejects(next, (e: unknown) => e instanceof ForbiddenError && /revoked/.test((e as Error).message));
    assert.ok(Date.now() - started < 10000, "it ends within the token cache's lifetime");
    c.close();
    adminClient.close();
  });
});

describe("TLS", () => {
  let dir: string;
  let server: RotaServer;
  let caPEM: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "rota-ts-tls-"));
    const ca = await makeCA(dir);
    caPEM = ca.caPEM;
    server = await RotaServer.start({ tls: { cert: ca.cert, key: ca.key, ca: ca.caPEM } });
  });
  after(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("a client given the private CA reaches the server, events and all; one without it does not", async () => {
    const c = new Client({ url: server.url, ca: caPEM });
    const type = uniq("tls");
    const j = await c.add({ type });
    const waiting = c.wait(j.id);
    const [leased] = await c.accept({ types: [type], limit: 1 });
    await c.finish([{ id: j.id, token: leased.token!, as: "complete" }]);
    assert.equal((await waiting).state, "completed");
    const untrusted = new Client({ url: server.url });
    await assert.rejects(untrusted.stats(), (e: unknown) => e instanceof ConnectionError && /certificate/i.test(e.message));
    assert.throws(() => new Client({ url: "http://127.0.0.1:1", ca: caPEM }), TypeError);
    c.close();
    untrusted.close();
  });
});

describe("generated types", () => {
  test("src/openapi.ts is what the document the server serves gives", async () => {
    const server = await RotaServer.start();
    try {
      const doc = await server.client().openapi();
      // @ts-expect-error: a plain JS module without declarations
      const { generate } = (await import("../../scripts/generate.mjs")) as { generate: (d: unknown) => string };
      const committed = readFileSync(join(pkgDir, "src", "openapi.ts"), "utf8");
      assert.equal(generate(doc) + "\n", committed, "run `npm run generate` in clients/typescript");
    } finally {
      await server.close();
    }
  });
});
