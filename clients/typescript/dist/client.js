import { operations } from "./openapi.js";
import { ConnectionError, FinishedError, ForbiddenError, NotFoundError, RotaError, UnavailableError, errorOf } from "./errors.js";
import { SSEParser } from "./sse.js";
import { Transport, answerError, readAll, sleep } from "./transport.js";
const terminal = new Set(["completed", "failed", "cancelled"]);
// GETs that find the server's store unavailable (503) are tried again, as
// the Go client does; a server that does not answer at all fails at once:
// that is more often a wrong address than a restart.
const readRetries = 4;
/**
 * Client talks to a rota server over its HTTP API. Every call returns a
 * promise; errors are RotaError subclasses named after the API's codes.
 */
export class Client {
    transport;
    constructor(opts) {
        if (!opts || typeof opts.url !== "string")
            throw new TypeError("rota: new Client({url}) needs the server's url");
        this.transport = new Transport(opts.url, opts);
    }
    /** close ends the client's idle connections. */
    close() {
        this.transport.close();
    }
    async op(id, params = {}, opts = {}) {
        const { method, path } = operations[id];
        const p = path.replace(/\{(\w+)\}/g, (_, name) => {
            const v = params[name];
            if (v === undefined)
                throw new TypeError(`rota: ${id} needs ${name}`);
            return encodeURIComponent(String(v));
        });
        if (method !== "GET")
            return this.transport.call(method, p, opts);
        for (let attempt = 0, wait = 100;; attempt++) {
            try {
                return await this.transport.call(method, p, opts);
            }
            catch (err) {
                if (!(err instanceof UnavailableError) || attempt === readRetries || opts.signal?.aborted)
                    throw err;
                await sleep(Math.min(err.retryAfterMs || wait, 2000), opts.signal);
                wait = Math.min(2 * wait, 2000);
            }
        }
    }
    // ---- producer side ----
    /** add adds a job and answers it, with its id and what the add did. */
    async add(job, opts = {}) {
        const r = await this.op("addJobs", {}, { body: addBody(job), signal: opts.signal });
        return { ...r.job, outcome: r.outcome };
    }
    /** addMany adds jobs in one transaction (all or none), in order. */
    async addMany(jobs, opts = {}) {
        if (!Array.isArray(jobs) || jobs.length === 0)
            throw new TypeError("rota: addMany needs a non-empty array of jobs");
        const r = await this.op("addJobs", {}, { body: { jobs: jobs.map(addBody) }, signal: opts.signal });
        return r.results.map((x) => ({ ...x.job, outcome: x.outcome }));
    }
    // ---- batches ----
    /**
     * addBatch adds a batch of jobs in one transaction (all or none) with
     * callbacks: on_complete is added once every job has ended, on_success
     * once every job completed; each callback's data gets the batch under
     * "batch". Keep it open to add jobs with addBatchJobs, then closeBatch.
     */
    async addBatch(batch, opts = {}) {
        if (!batch || typeof batch !== "object")
            throw new TypeError("rota: addBatch needs a batch, such as {jobs: [...], on_complete: {...}}");
        const body = {
            ...batch,
            jobs: batch.jobs?.map(addBody),
            on_complete: batch.on_complete && addBody(batch.on_complete),
            on_success: batch.on_success && addBody(batch.on_success),
        };
        return withJobs(await this.op("addBatch", {}, { body, signal: opts.signal }));
    }
    /** addBatchJobs adds jobs to a batch that is not done (FinishedError when it is). */
    async addBatchJobs(id, jobs, opts = {}) {
        if (!Array.isArray(jobs) || jobs.length === 0)
            throw new TypeError("rota: addBatchJobs needs a non-empty array of jobs");
        const body = { jobs: jobs.map(addBody) };
        return withJobs(await this.op("addBatchJobs", { id: batchID(id) }, { body, signal: opts.signal }));
    }
    /** getBatch answers a batch: its counts by outcome, whether it is done, and its callbacks' jobs. */
    async getBatch(id, opts = {}) {
        return (await this.op("getBatch", { id: batchID(id) }, { signal: opts.signal })).batch;
    }
    /** listBatches answers a page of batches, newest first; pass next_cursor back as before. */
    async listBatches(query = {}, opts = {}) {
        const q = new URLSearchParams();
        for (const [k, v] of Object.entries(query))
            if (v !== undefined && v !== null)
                q.append(k, String(v));
        return this.op("listBatches", {}, { query: q, signal: opts.signal });
    }
    /** closeBatch closes an open batch: it is done once its jobs have ended. */
    async closeBatch(id, opts = {}) {
        return (await this.op("closeBatch", { id: batchID(id) }, { signal: opts.signal })).batch;
    }
    /** get answers a job; NotFoundError when there is none. */
    async get(id, opts = {}) {
        return (await this.op("getJob", { id: jobID(id) }, { signal: opts.signal })).job;
    }
    /**
     * logs answers a page of a job's log: by default the latest attempt that
     * logged, from its first record (pass next back as after for the next
     * page); attempts sums up every attempt's (records kept and dropped).
     */
    async logs(id, query = {}, opts = {}) {
        const q = new URLSearchParams();
        for (const [k, v] of Object.entries(query))
            if (v !== undefined && v !== null)
                q.append(k, String(v));
        return this.op("getJobLogs", { id: jobID(id) }, { query: q, signal: opts.signal });
    }
    /**
     * deps answers a job's place in its workflow: the jobs it was added after
     * (after, after_keys) with their outcomes, in the order it named them, and
     * the ids of up to limit jobs added after it.
     */
    async deps(id, opts = {}) {
        const q = new URLSearchParams();
        if (opts.limit !== undefined)
            q.append("limit", String(opts.limit));
        return this.op("getJobDeps", { id: jobID(id) }, { query: q, signal: opts.signal });
    }
    /**
     * history answers a job's history, oldest first: what its row tells (added,
     * each attempt's start and error, its end) and the audit trail, every change
     * made to it and to its type's and group's settings, with the name of the
     * token that made it (actor) and what changed (detail). A removed job's
     * history is its audit records; a job out of the token's reach is a
     * NotFoundError.
     */
    async history(id, opts = {}) {
        return (await this.op("getJobHistory", { id: jobID(id) }, { signal: opts.signal })).history;
    }
    /** list answers one page of jobs; pass next_cursor back as cursor for the next. */
    async list(query = {}, opts = {}) {
        const q = new URLSearchParams();
        for (const [k, v] of Object.entries(query)) {
            if (v === undefined || v === null)
                continue;
            if (k === "group") {
                for (const g of v)
                    q.append("group", g); // one by one: names may hold commas
            }
            else if (Array.isArray(v)) {
                if (v.length > 0)
                    q.append(k, v.join(","));
            }
            else if (v instanceof Date) {
                q.append(k, v.toISOString());
            }
            else {
                q.append(k, String(v));
            }
        }
        return this.op("listJobs", {}, { query: q, signal: opts.signal });
    }
    /** listAll answers every job the query matches, page by page. */
    async *listAll(query = {}, opts = {}) {
        let cursor;
        do {
            const page = await this.list({ ...query, cursor }, opts);
            yield* page.jobs;
            cursor = page.next_cursor;
        } while (cursor);
    }
    /** cancel cancels a job (a running one when its worker learns of it) and answers it. */
    async cancel(id, opts = {}) {
        return (await this.op("cancelJob", { id: jobID(id) }, { signal: opts.signal })).job;
    }
    /** resubmit asks for a job to run again (an ended one at once, a running one after its run). */
    async resubmit(id, req = {}, opts = {}) {
        const body = { ...req, run_at: timeOf(req.run_at) };
        const r = await this.op("resubmitJob", { id: jobID(id) }, { body, signal: opts.signal });
        return { ...r.job, outcome: r.outcome };
    }
    /** update changes a pending or paused job in place and answers it. */
    async update(id, req, opts = {}) {
        const body = { ...req, run_at: timeOf(req.run_at) };
        return (await this.op("updateJob", { id: jobID(id) }, { body, signal: opts.signal })).job;
    }
    /** remove deletes a job (a running one is cancelled first). */
    async remove(id, opts = {}) {
        await this.op("removeJob", { id: jobID(id) }, { signal: opts.signal });
    }
    /**
     * wait answers the job once it is in one of `states` (by default once it
     * has ended: completed, failed or cancelled), following it on the event
     * stream, as couch_jobs' wait does. NotFoundError when it is removed
     * first; FinishedError when it ends in a state not asked for (it can
     * never reach one of them then).
     */
    async wait(id, opts = {}) {
        jobID(id);
        const want = new Set(opts.states?.length ? opts.states : terminal);
        const settled = (state) => {
            if (want.has(state))
                return true;
            if (terminal.has(state))
                throw new FinishedError(`job ${id} has ended (${state}) without being ${[...want].join(" or ")}`, "finished", 409);
            return false;
        };
        for (;;) {
            for await (const ev of this.subscribe({ job: id, signal: opts.signal })) {
                if (ev.removed)
                    throw new NotFoundError(`job ${id} was removed`, "not_found", 404);
                if (settled(ev.state))
                    return this.get(id, opts);
            }
            if (opts.signal?.aborted)
                throw opts.signal.reason;
            // The stream ended without the job ending (a server shutting down):
            // look, and follow it again.
            const j = await this.get(id, opts);
            if (settled(j.state))
                return j;
        }
    }
    /** stats counts jobs by type, group and state, and in total by state. */
    async stats(opts = {}) {
        return this.op("stats", {}, { signal: opts.signal });
    }
    /**
     * subscribe follows job changes on the server's event stream, as an async
     * iterator. A connection that drops is opened again with Last-Event-ID,
     * and the server replays what changed meanwhile (a change may come twice,
     * none is missed, except removals). Break out of the loop, or abort the
     * signal, to end it.
     */
    subscribe(opts = {}) {
        const client = this;
        // Named as the document names them (EventsQuery), so that a change
        // there does not compile here.
        const eq = {
            job: opts.job === undefined ? undefined : jobID(opts.job),
            type: opts.types,
            running: opts.running,
            completed: opts.completed,
        };
        const q = new URLSearchParams();
        for (const [k, v] of Object.entries(eq)) {
            if (Array.isArray(v))
                for (const x of v)
                    q.append(k, String(x));
            else if (v !== undefined)
                q.append(k, String(v));
        }
        const { path } = operations.events;
        let last = opts.lastEventId;
        const stop = new AbortController();
        const onAbort = () => stop.abort(opts.signal?.reason);
        opts.signal?.addEventListener("abort", onAbort, { once: true });
        async function* stream() {
            try {
                for (let backoff = 100; !stop.signal.aborted;) {
                    const headers = { Accept: "text/event-stream" };
                    if (last && opts.job === undefined)
                        headers["Last-Event-ID"] = last;
                    let res;
                    try {
                        res = await client.transport.open("GET", path, { query: q, headers, signal: stop.signal });
                    }
                    catch (err) {
                        if (stop.signal.aborted)
                            return;
                        if (!(err instanceof ConnectionError))
                            throw err;
                        await sleep(backoff, stop.signal);
                        backoff = Math.min(2 * backoff, 5000);
                        continue;
                    }
                    if (res.statusCode !== 200) {
                        const text = await readAll(res).catch(() => "");
                        const err = answerError("GET", path, res.statusCode ?? 0, text, res.headers["retry-after"]);
                        if (!(err instanceof UnavailableError))
                            throw err;
                        await sleep(Math.max(err.retryAfterMs, backoff), stop.signal);
                        backoff = Math.min(2 * backoff, 5000);
                        continue;
                    }
                    if (!last && opts.job === undefined) {
                        // Before the first event, a reconnection resumes from when this
                        // connection began by the server's clock (event ids are its
                        // change times), a second early so that nothing between is lost.
                        const d = Date.parse(String(res.headers.date ?? ""));
                        if (!Number.isNaN(d))
                            last = String((d - 1000) * 1000);
                    }
                    backoff = 100;
                    const parser = new SSEParser();
                    res.setEncoding("utf8");
                    let ended = false;
                    try {
                        for await (const chunk of res) {
                            for (const m of parser.push(chunk)) {
                                if (m.id !== undefined && m.event === "" && m.data === undefined) {
                                    last = m.id; // an id alone: how far a filtered stream got
                                    continue;
                                }
                                switch (m.event) {
                                    case "job": {
                                        const ev = JSON.parse(m.data ?? "null");
                                        if (m.id !== undefined)
                                            last = m.id;
                                        yield ev;
                                        break;
                                    }
                                    case "end":
                                        ended = true;
                                        return;
                                    case "reset":
                                        opts.onReset?.(reasonOf(m.data));
                                        break;
                                    case "revoked":
                                        // The token was revoked: reconnecting would only be refused.
                                        throw new ForbiddenError(`rota: event stream: ${reasonOf(m.data)}`, "forbidden", 403);
                                    case "resume":
                                        // The server ended the stream (this client fell behind):
                                        // the connection closes, and the next one resumes.
                                        break;
                                }
                            }
                        }
                    }
                    catch (err) {
                        if (stop.signal.aborted)
                            return;
                        if (err instanceof ForbiddenError)
                            throw err;
                        if (err instanceof SyntaxError)
                            throw new RotaError(`rota: event stream: bad event: ${err.message}`, "internal", 200);
                        // The connection broke: open another below.
                    }
                    finally {
                        if (!ended)
                            res.destroy();
                    }
                    if (stop.signal.aborted)
                        return;
                    await sleep(backoff, stop.signal);
                }
            }
            finally {
                opts.signal?.removeEventListener("abort", onAbort);
                stop.abort();
            }
        }
        const it = stream();
        Object.defineProperty(it, "lastEventId", { get: () => last, enumerable: true });
        return it;
    }
    // ---- settings ----
    /** types lists the types the server knows, with their settings. */
    async types(opts = {}) {
        return (await this.op("listTypes", {}, { signal: opts.signal })).types;
    }
    /** setType replaces a type's settings. */
    async setType(cfg, opts = {}) {
        return this.op("setType", { type: cfg.type }, { body: cfg, signal: opts.signal });
    }
    /** groups lists the groups' settings. */
    async groups(opts = {}) {
        return (await this.op("listGroups", {}, { signal: opts.signal })).groups;
    }
    /** setGroup sets a group's settings (for one type, or all). */
    async setGroup(cfg, opts = {}) {
        return this.op("setGroup", {}, { body: cfg, signal: opts.signal });
    }
    // ---- named tokens (with the admin token) ----
    /** createToken creates a named token and answers it with its secret, shown this once. */
    async createToken(req, opts = {}) {
        return this.op("createToken", {}, { body: req, signal: opts.signal });
    }
    /** tokens lists the named tokens, without their secrets. */
    async tokens(opts = {}) {
        return (await this.op("listTokens", {}, { signal: opts.signal })).tokens;
    }
    /** revokeToken revokes a named token. */
    async revokeToken(name, opts = {}) {
        await this.op("revokeToken", { name }, { signal: opts.signal });
    }
    /** openapi answers the server's OpenAPI document. */
    async openapi(opts = {}) {
        return this.op("openapi", {}, { signal: opts.signal });
    }
    // ---- worker side (Worker uses these; they are here for workers of your own) ----
    /** accept leases due jobs of some types, each with its token, waiting up to req.wait for some. */
    async accept(req, opts = {}) {
        return (await this.op("accept", {}, { body: req, signal: opts.signal })).jobs;
    }
    /** heartbeat extends leases, one answer per item (an item's error in its result). */
    async heartbeat(items, opts = {}) {
        const r = await this.op("heartbeatBatch", {}, { body: { items }, signal: opts.signal });
        if (r.results.length !== items.length) {
            throw new RotaError(`rota: heartbeat: ${r.results.length} answers for ${items.length} leases`, "internal", 200);
        }
        return r.results;
    }
    /**
     * appendLogs appends records to the log of the attempt the token holds
     * (the server keeps at most 64 KiB an attempt and counts the rest as
     * dropped); WorkerConflictError or CanceledError when the lease is lost.
     */
    async appendLogs(id, req, opts = {}) {
        return this.op("appendJobLogs", { id: jobID(id) }, { body: req, signal: opts.signal });
    }
    /**
     * finish ends leases (complete, fail, snooze, release, cancel), and
     * answers each item's error, or undefined where it succeeded.
     */
    async finish(items, opts = {}) {
        const r = await this.op("finishBatch", {}, { body: { items }, signal: opts.signal });
        if (r.results.length !== items.length) {
            throw new RotaError(`rota: finish: ${r.results.length} answers for ${items.length} leases`, "internal", 200);
        }
        return r.results.map((x) => (x.error ? errorOf(x.error.code, x.error.message) : undefined));
    }
}
function addBody(job) {
    if (!job || typeof job.type !== "string")
        throw new TypeError("rota: a job needs a type");
    return { ...job, run_at: timeOf(job.run_at), expires_at: timeOf(job.expires_at) };
}
function timeOf(t) {
    if (t === undefined)
        return undefined;
    if (t instanceof Date) {
        if (Number.isNaN(t.getTime()))
            throw new TypeError("rota: run_at is an invalid Date");
        return t.toISOString();
    }
    return t;
}
function withJobs(r) {
    return { ...r.batch, jobs: (r.results ?? []).map((x) => ({ ...x.job, outcome: x.outcome })) };
}
function batchID(id) {
    if (!Number.isSafeInteger(id) || id <= 0)
        throw new TypeError(`rota: batch id ${String(id)} is not a positive integer`);
    return id;
}
function jobID(id) {
    if (!Number.isSafeInteger(id) || id <= 0)
        throw new TypeError(`rota: job id ${String(id)} is not a positive integer`);
    return id;
}
function reasonOf(data) {
    try {
        return JSON.parse(data ?? "{}").reason ?? "";
    }
    catch {
        return data ?? "";
    }
}
