import { EventEmitter } from "node:events";
import { hostname } from "node:os";
import type { Client } from "./client.js";
import {
  CanceledError,
  FinishedError,
  ForbiddenError,
  InvalidInputError,
  NotFoundError,
  RotaError,
  TooLargeError,
  UnauthorizedError,
  WorkerConflictError,
  errorOf,
} from "./errors.js";
import type { Ending, FinishItem, HeartbeatItem, Job, LogRecord } from "./openapi.js";
import { sleep } from "./transport.js";

/** What a handler gets beside its job. */
export interface JobContext {
  /**
   * Aborted when the job is no longer the handler's to finish: cancelled
   * or removed (reason CanceledError), its lease lost (LeaseLostError), or
   * the worker's shutdown timeout passed (ShutdownError: the job is handed
   * back when the handler then throws, and completes when it returns).
   */
  signal: AbortSignal;
  /** progress reports the job's progress (0..100); it extends the lease too. */
  progress(percent: number): Promise<void>;
  /**
   * log is the job's logger: its records at the worker's jobLogLevel and
   * above are kept with the job's attempt (client.logs(id), rota logs ID,
   * the job's dashboard page), at most 64 KiB an attempt (the rest are
   * counted and dropped), and reach the worker's logger too. The worker
   * sends them every second and before the job finishes.
   */
  log: JobLogger;
}

/** JobLogger logs a message with optional attributes (a JSON object). */
export interface JobLogger {
  debug(msg: string, attrs?: Record<string, unknown>): void;
  info(msg: string, attrs?: Record<string, unknown>): void;
  warn(msg: string, attrs?: Record<string, unknown>): void;
  error(msg: string, attrs?: Record<string, unknown>): void;
}

/** The levels of a job's log, lowest first. */
export type JobLogLevel = "debug" | "info" | "warn" | "error";

const logLevels: JobLogLevel[] = ["debug", "info", "warn", "error"];
// What one attempt keeps, as the server bounds it: a record counts its
// message and attributes plus logOverhead bytes.
const maxLogBytes = 64 << 10;
const logOverhead = 32;
const logFlushMs = 1000;

/** JobLog is a run's log: records buffered to send, bounded as the server bounds the attempt's. */
class JobLog {
  pending: LogRecord[] = [];
  bytes = 0;
  dropped = 0;
  full = false;
  closed = false;
  sending?: Promise<void>; // one send at a time, in order

  add(level: JobLogLevel, msg: string, attrs?: Record<string, unknown>): void {
    if (this.closed) return;
    const message = clean(String(msg));
    const rec: LogRecord = { time: new Date().toISOString(), level: level.toUpperCase(), message };
    let size = Buffer.byteLength(message) + logOverhead;
    if (attrs && typeof attrs === "object" && Object.keys(attrs).length > 0) {
      let enc: string;
      try {
        enc = clean(JSON.stringify(attrs));
      } catch {
        enc = JSON.stringify({ attrs: String(attrs) });
      }
      rec.attrs = JSON.parse(enc) as Record<string, unknown>;
      size += Buffer.byteLength(enc);
    }
    if (this.full || this.bytes + size > maxLogBytes) {
      this.full = true;
      this.dropped++;
      return;
    }
    this.bytes += size;
    this.pending.push(rec);
  }

  take(last: boolean): { records: LogRecord[]; dropped: number } | undefined {
    if (this.closed) return undefined;
    this.closed = last;
    const records = this.pending;
    const dropped = this.dropped;
    this.pending = [];
    this.dropped = 0;
    return records.length > 0 || dropped > 0 ? { records, dropped } : undefined;
  }

  giveBack(records: LogRecord[], dropped: number): void {
    if (this.closed) return;
    this.pending = records.concat(this.pending);
    this.dropped += dropped;
  }
}

/** clean is s as text the server keeps: no NUL, no lone surrogate. */
function clean(s: string): string {
  return s.replace(/\u0000/g, "\uFFFD").replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, "\uFFFD");
}

/**
 * A handler runs one job: what it returns is the job's result (undefined
 * for none); what it throws fails the attempt, which retries with back-off
 * until the job runs out of attempts. Throw permanent(…) to fail the job
 * for good, snooze(ms) to run it again later without using up an attempt,
 * or cancelJob(…) to cancel it.
 */
export type Handler = (job: Job, ctx: JobContext) => unknown | Promise<unknown>;

/** The lease was lost: the job is no longer this worker's. */
export class LeaseLostError extends Error {
  constructor(message = "lease lost") {
    super(message);
    this.name = "LeaseLostError";
  }
}

/** The worker is shutting down and its shutdown timeout passed. */
export class ShutdownError extends Error {
  constructor(message = "worker shut down") {
    super(message);
    this.name = "ShutdownError";
  }
}

/** Thrown by a handler: fail the job without further retries. */
export class PermanentError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "PermanentError";
  }
}

/** Thrown by a handler: run the job again after delayMs, without using up an attempt. */
export class SnoozeError extends Error {
  readonly delayMs: number;
  constructor(delayMs: number) {
    super(`snooze for ${delayMs}ms`);
    this.name = "SnoozeError";
    this.delayMs = delayMs;
  }
}

/** Thrown by a handler: cancel the job. */
export class CancelJobError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "CancelJobError";
  }
}

/** permanent returns an error that, thrown, fails the job for good. */
export function permanent(err: unknown): PermanentError {
  return new PermanentError(err instanceof Error ? err.message : String(err), { cause: err });
}

/** snooze returns an error that, thrown, runs the job again after ms. */
export function snooze(ms: number): SnoozeError {
  if (!Number.isFinite(ms) || ms < 0) throw new TypeError(`rota: snooze(${ms}): want a delay in milliseconds, 0 or more`);
  return new SnoozeError(ms);
}

/** cancelJob returns an error that, thrown, cancels the job. */
export function cancelJob(reason: string): CancelJobError {
  return new CancelJobError(reason);
}

/** Where a worker logs; console has this shape. */
export interface Logger {
  info(msg: string, ...args: unknown[]): void;
  warn(msg: string, ...args: unknown[]): void;
  error(msg: string, ...args: unknown[]): void;
}

export interface WorkerOptions {
  /** How many jobs run at once; 10 by default. */
  concurrency?: number;
  /** Names this worker in the jobs it runs; hostname:pid by default. */
  name?: string;
  /**
   * The most jobs leased ahead of the free slots, so that a slot that frees
   * starts its next job at once rather than an accept later; by default
   * concurrency (at most 256), negative for none. As the Go worker, it
   * leases ahead only as many as the slots are expected to free during four
   * accepts, from the recent durations of handlers and accepts: none for
   * jobs much longer than an accept.
   */
  prefetch?: number;
  /** Overrides the types' lease timeouts: a Go duration such as "30s". */
  leaseTimeout?: string;
  /** How long one accept waits for work, in ms; 30000 by default. */
  pollWait?: number;
  /**
   * How long run waits for running handlers after a stop, in ms, before it
   * aborts their signals (ShutdownError); 10000 by default.
   */
  shutdownTimeout?: number;
  /**
   * How long run then waits for the aborted handlers, in ms; the jobs of
   * those still running after it are handed back anyway. 5000 by default.
   */
  shutdownGrace?: number;
  /** Most finishes in one request; 500 by default. */
  maxBatch?: number;
  /** Where the worker logs; console by default. */
  logger?: Logger;
  /** The lowest level of a handler's ctx.log records kept with the job; "info" by default. */
  jobLogLevel?: JobLogLevel;
}

export interface RunOptions {
  /** Ends run, gracefully. */
  signal?: AbortSignal;
  /** Stop on SIGTERM and SIGINT too; true by default. */
  handleSignals?: boolean;
}

/** What the worker reports of each job it ended, as its "finish" event. */
export interface FinishReport {
  job: Job;
  /** How the worker ended it; "abandon" when it could not (cancelled, lease lost). */
  as: Ending | "abandon";
  /** Why the server refused the ending, or why the job was abandoned. */
  error?: Error;
}

interface Run {
  job: Job;
  id: number;
  token: string;
  tag?: string; // leaseTag(token), made when an event about the job first comes
  // Why the job is no longer the handler's to finish, once it is not; its
  // AbortController is made only when the handler reads its signal (most
  // never do, and one per job cost a drain of no-op jobs a tenth of its time).
  reason?: Error;
  ac?: AbortController;
  skew: number; // this clock minus the server's, as the accept measured it
  leaseUntil: number; // on this clock
  leaseLen: number;
  started: boolean;
  ended: boolean;
  settled: boolean;
  log?: JobLog; // made when the handler first logs
}

const retryFirst = 100;
const retryMax = 5000;
const aheadTrips = 4;
const maxDefaultPrefetch = 256;

/**
 * Worker runs jobs with handlers, as rota's Go worker does: it leases
 * ahead of its free slots (one accept for many jobs), keeps leases by
 * batched heartbeats, finishes in shared requests (those that end while one
 * is in flight go in the next), tries a finish again while its lease holds,
 * follows the event stream to stop a handler whose job is cancelled, and
 * shuts down gracefully.
 *
 * It emits "finish" (FinishReport) for each job it ends or abandons.
 */
export class Worker extends EventEmitter {
  readonly client: Client;
  readonly name: string;
  private readonly concurrency: number;
  private readonly prefetch: number;
  private readonly leaseTimeout?: string;
  private readonly pollWait: number;
  private readonly shutdownTimeout: number;
  private readonly shutdownGrace: number;
  private readonly log: Logger;
  private readonly jobLogLevel: number;
  private readonly handlers = new Map<string, Handler>();
  private readonly runs = new Map<number, Run>();
  private readonly queue: Run[] = []; // leased, waiting for a handler slot
  private readonly finisher: Batcher<FinishItem, RotaError | undefined>;
  private handling = 0; // handlers running
  private leased = 0; // jobs from their accept until their handler returns
  private finishing = 0; // finishes not yet answered
  private unsettled = 0; // jobs not yet finished or handed back
  private wake?: () => void; // the accept loop waits on it
  private settledWake?: () => void;
  private kick?: () => void; // wakes the heartbeat loop
  private paceRun = 0; // moving averages, ms
  private paceAccept = 0;
  private running = false;
  private refusal?: RotaError; // the server refused the worker's credentials
  private halt?: () => void;

  constructor(client: Client, opts: WorkerOptions = {}) {
    super();
    this.client = client;
    this.concurrency = Math.max(1, Math.floor(opts.concurrency ?? 10));
    this.name = opts.name ?? `${hostname()}:${process.pid}`;
    const p = opts.prefetch ?? Math.min(this.concurrency, maxDefaultPrefetch);
    this.prefetch = p < 0 ? 0 : p;
    this.leaseTimeout = opts.leaseTimeout;
    this.pollWait = opts.pollWait ?? 30000;
    this.shutdownTimeout = opts.shutdownTimeout ?? 10000;
    this.shutdownGrace = opts.shutdownGrace ?? 5000;
    this.log = opts.logger ?? console;
    const lvl = opts.jobLogLevel ?? "info";
    if (!logLevels.includes(lvl)) throw new TypeError(`rota: jobLogLevel ${String(lvl)}: want debug, info, warn or error`);
    this.jobLogLevel = logLevels.indexOf(lvl);
    // Each request is bounded, so that a wedged connection cannot hold
    // every finish forever (the finish is then tried again).
    this.finisher = new Batcher(opts.maxBatch ?? 500, (items) => client.finish(items, { signal: AbortSignal.timeout(60000) }));
  }

  /** handle registers the handler of a job type. */
  handle(type: string, handler: Handler): this {
    if (this.running) throw new Error("rota: handle called on a running worker");
    if (typeof type !== "string" || type === "" || /[*?[\]{}\\]/.test(type)) {
      throw new TypeError(`rota: handle: ${JSON.stringify(type)} is not a job type`);
    }
    if (this.handlers.has(type)) throw new Error(`rota: handle: type ${type} already has a handler`);
    if (typeof handler !== "function") throw new TypeError("rota: handle: the handler must be a function");
    this.handlers.set(type, handler);
    return this;
  }

  /**
   * run accepts and runs jobs until the signal aborts or the process gets
   * SIGTERM or SIGINT, then shuts down: it stops accepting, hands back the
   * jobs leased ahead, waits up to shutdownTimeout for running handlers,
   * aborts the rest and hands their jobs back as each returns (after
   * shutdownGrace, anyway), and resolves once every job it took is finished
   * or handed back.
   *
   * When the server refuses the worker's calls (UnauthorizedError,
   * ForbiddenError: its token is missing, wrong, revoked, or may not take
   * these jobs), no retry can succeed: it logs it, shuts down the same way,
   * and run rejects with an error of that class. Jobs it could not finish
   * run again when their leases expire.
   */
  async run(opts: RunOptions = {}): Promise<void> {
    if (this.running) throw new Error("rota: worker already running");
    if (this.handlers.size === 0) throw new Error("rota: worker has no handlers");
    this.running = true;
    const types = [...this.handlers.keys()].sort();
    const stop = new AbortController();
    const onStop = () => {
      if (!stop.signal.aborted) stop.abort(new ShutdownError());
      this.wake?.();
    };
    this.halt = onStop;
    if (opts.signal?.aborted) onStop();
    opts.signal?.addEventListener("abort", onStop, { once: true });
    const handleSignals = opts.handleSignals ?? true;
    if (handleSignals) {
      process.on("SIGTERM", onStop);
      process.on("SIGINT", onStop);
    }
    const background = new AbortController();
    const watching = this.watch(types, background.signal);
    const beating = this.heartbeatLoop(background.signal);
    const logging = this.logLoop(background.signal);
    try {
      await this.acceptLoop(types, stop.signal);
      await this.shutdown();
    } finally {
      background.abort();
      this.kick?.();
      await Promise.allSettled([watching, beating, logging]);
      opts.signal?.removeEventListener("abort", onStop);
      if (handleSignals) {
        process.off("SIGTERM", onStop);
        process.off("SIGINT", onStop);
      }
      this.running = false;
      this.halt = undefined;
    }
    if (this.refusal) {
      const r = this.refusal;
      this.refusal = undefined;
      throw errorOf(r.code, `rota: worker stopped: the server refused its calls: ${r.message}`, r.status);
    }
  }

  /** refuse stops the worker after the server refused a call with err: every later call would be refused alike. */
  private refuse(err: RotaError): void {
    if (this.refusal) return;
    this.refusal = err;
    this.log.error(`rota: the server refused the worker's credentials; stopping: give it a token that is valid and may take these jobs: ${err.message}`);
    this.halt?.();
  }

  private async acceptLoop(types: string[], stop: AbortSignal): Promise<void> {
    let backlog = false;
    while (!stop.aborted) {
      const ahead = this.ahead();
      const limit = this.concurrency + ahead;
      if (this.leased > limit - Math.max(1, Math.floor(ahead / 2)) || this.finishing >= 2 * this.concurrency) {
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = undefined;
        continue;
      }
      const n = limit - this.leased;
      this.leased += n;
      // After an accept that filled every slot there is likely more work:
      // the next does not wait, so that its time is a round trip (ahead
      // needs it). One that finds nothing is followed by one that waits.
      const wait = backlog ? 0 : this.pollWait;
      const sent = performance.now();
      let jobs: Job[];
      try {
        jobs = await this.client.accept(
          { types, limit: n, wait: `${wait}ms`, worker: this.name, lease_timeout: this.leaseTimeout },
          { signal: stop },
        );
      } catch (err) {
        this.leased -= n;
        if (stop.aborted) break;
        if (refused(err)) {
          this.refuse(err);
          break;
        }
        this.log.error(`rota: accept failed: ${(err as Error).message}`);
        await sleep(1000, stop);
        continue;
      }
      const took = Date.now();
      if (wait === 0 && jobs.length > 0) this.paceAccept = average(this.paceAccept, performance.now() - sent);
      backlog = jobs.length === n;
      this.leased -= n - jobs.length;
      for (const job of jobs) this.queue.push(this.start(job, took));
      this.pump(stop);
    }
    // Jobs leased ahead that have not started go back now, without using up
    // an attempt, rather than start after the shutdown began.
    for (const r of this.queue.splice(0)) {
      r.started = true;
      this.leased--;
      void this.end(r, { id: r.id, token: r.token, as: "release" });
    }
  }

  /** ahead is how many jobs to lease beyond the handler slots (see WorkerOptions.prefetch). */
  private ahead(): number {
    if (this.prefetch === 0 || this.paceRun === 0 || this.paceAccept === 0) return 0;
    const n = Math.floor((aheadTrips * this.concurrency * this.paceAccept) / this.paceRun);
    return n < 2 ? 0 : Math.min(n, this.prefetch);
  }

  private start(job: Job, took: number): Run {
    const leaseEnd = job.lease_until ? Date.parse(job.lease_until) : took + 30000;
    const startedAt = job.started_at ? Date.parse(job.started_at) : NaN;
    // The lease starts as the job does: took minus started_at is this
    // clock's lead over the server's (a little over, by the answer's trip).
    const skew = !Number.isNaN(startedAt) && startedAt < leaseEnd ? took - startedAt : 0;
    const r: Run = {
      job,
      id: job.id,
      token: job.token ?? "",
      skew,
      leaseUntil: leaseEnd + skew,
      leaseLen: leaseEnd + skew - took,
      started: false,
      ended: false,
      settled: false,
    };
    const old = this.runs.get(job.id);
    if (old) abort(old, new LeaseLostError("the job was handed to this worker again"));
    this.runs.set(job.id, r);
    this.unsettled++;
    this.kick?.();
    return r;
  }

  /** pump starts waiting jobs while handler slots are free. */
  private pump(stop: AbortSignal): void {
    while (this.handling < this.concurrency && this.queue.length > 0) {
      const r = this.queue.shift()!;
      if (stop.aborted && !r.started) {
        r.started = true;
        this.leased--;
        void this.end(r, { id: r.id, token: r.token, as: "release" });
        continue;
      }
      void this.execute(r, stop);
    }
  }

  private async execute(r: Run, stop: AbortSignal): Promise<void> {
    r.started = true;
    const run = r.reason === undefined;
    let result: unknown;
    let err: unknown;
    let failed = false;
    let jl: JobLogger | undefined;
    const logger = (): JobLogger => (jl ??= this.jobLogger(r));
    if (run) {
      this.handling++;
      const began = performance.now();
      try {
        const h = this.handlers.get(r.job.type)!;
        result = await h(r.job, {
          get signal() {
            return signalOf(r);
          },
          progress: (p) => this.progress(r, p),
          get log() {
            return logger();
          },
        });
      } catch (e) {
        err = e;
        failed = true;
      }
      this.paceRun = average(this.paceRun, performance.now() - began);
      this.handling--;
    } else {
      err = r.reason;
      failed = true;
    }
    this.leased--;
    const released = r.ended;
    r.ended = true;
    const cause = r.reason;
    this.pump(stop);
    this.wake?.();
    if (released) return; // the shutdown handed it back already
    if (cause instanceof CanceledError || cause instanceof LeaseLostError) {
      // The job is no longer ours; any finish would be refused.
      this.log.info(`rota: job ${r.id} (${r.job.type}) abandoned: ${cause.message}`);
      this.forget(r);
      this.settle(r);
      this.emit("finish", { job: r.job, as: "abandon", error: cause } satisfies FinishReport);
      return;
    }
    const item: FinishItem = { id: r.id, token: r.token, as: "complete" };
    if (failed && cause instanceof ShutdownError) {
      item.as = "release"; // stopped by the shutdown, not failed: the attempt is given back
    } else if (!failed) {
      if (result !== undefined) item.result = result as FinishItem["result"];
    } else if (err instanceof SnoozeError) {
      item.as = "snooze";
      item.run_at = new Date(Date.now() + err.delayMs).toISOString();
    } else if (err instanceof CancelJobError) {
      item.as = "cancel";
      item.error = err.message;
    } else if (err instanceof PermanentError) {
      item.as = "fail";
      item.error = err.message;
      item.permanent = true;
    } else {
      item.as = "fail";
      item.error = errorText(err);
    }
    await this.sendLog(r, true);
    await this.end(r, item);
  }

  /** jobLogger is the logger of r's handler (JobContext.log). */
  private jobLogger(r: Run): JobLogger {
    const at = (level: JobLogLevel) => (msg: string, attrs?: Record<string, unknown>) => {
      if (logLevels.indexOf(level) >= this.jobLogLevel) (r.log ??= new JobLog()).add(level, msg, attrs);
      if (level !== "debug") {
        const line = `rota: job ${r.id} (${r.job.type}): ${msg}`;
        if (attrs === undefined) this.log[level](line);
        else this.log[level](line, attrs);
      }
    };
    return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
  }

  /**
   * sendLog sends what r's log holds (all of it, and closes the log, when
   * last: the run ends, and its lease appends no more); a send already
   * under way is waited for when last, and left alone otherwise.
   */
  private async sendLog(r: Run, last: boolean): Promise<void> {
    const jl = r.log;
    if (!jl) return;
    if (jl.sending) {
      if (!last) return;
      await jl.sending;
    }
    const got = jl.take(last);
    if (!got) return;
    const send = (async () => {
      try {
        await this.client.appendLogs(r.id, { token: r.token, records: got.records, dropped: got.dropped || undefined }, { signal: AbortSignal.timeout(60000) });
      } catch (err) {
        if (!last && retryable(err as Error)) jl.giveBack(got.records, got.dropped);
        this.log.warn(`rota: job ${r.id} (${r.job.type}): sending its log records failed: ${(err as Error).message}`);
      }
    })();
    jl.sending = send;
    try {
      await send;
    } finally {
      if (jl.sending === send) jl.sending = undefined;
    }
  }

  /** logLoop sends the running jobs' records every second. */
  private async logLoop(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await sleep(logFlushMs, signal).catch(() => undefined);
      if (signal.aborted) return;
      await Promise.all([...this.runs.values()].filter((r) => r.log && !r.ended).map((r) => this.sendLog(r, false)));
    }
  }

  /**
   * end sends r's ending, trying again with back-off while the error may
   * pass and the lease holds: a finish given up on leaves the job to run
   * again once its lease expires.
   */
  private async end(r: Run, item: FinishItem): Promise<void> {
    this.finishing++;
    let error: RotaError | Error | undefined;
    try {
      for (let wait = retryFirst; ; wait = Math.min(2 * wait, retryMax)) {
        try {
          error = await this.finisher.do(item);
        } catch (e) {
          error = e as Error;
        }
        if (!error) break;
        const left = r.leaseUntil - Date.now();
        const what = `rota: job ${r.id} (${r.job.type}): ${item.as}`;
        if (error instanceof CanceledError) {
          this.log.info(`${what} refused: the job was cancelled or removed: ${error.message}`);
          break;
        }
        if (error instanceof WorkerConflictError) {
          this.log.warn(`${what} refused: the lease was lost, so the job runs again (or already has): ${error.message}`);
          break;
        }
        if (refused(error)) {
          this.log.error(`${what} refused; the job runs again when its lease expires: ${error.message}`);
          this.refuse(error);
          break;
        }
        if (!retryable(error)) {
          this.log.error(`${what} failed: ${error.message}`);
          break;
        }
        if (left <= 0) {
          this.log.error(`${what} failed, and the lease has run out: giving up; the job runs again: ${error.message}`);
          break;
        }
        const d = Math.min(wait, Math.max(r.leaseLen / 4, 5), left);
        this.log.warn(`${what} failed; trying again in ${Math.round(d)}ms while the lease holds: ${error.message}`);
        await sleep(d);
      }
    } finally {
      this.finishing--;
      this.forget(r);
      this.settle(r);
      this.wake?.();
    }
    this.emit("finish", { job: r.job, as: item.as, error } satisfies FinishReport);
  }

  private forget(r: Run): void {
    if (this.runs.get(r.id) === r) this.runs.delete(r.id);
  }

  private settle(r: Run): void {
    if (r.settled) return;
    r.settled = true;
    this.unsettled--;
    if (this.unsettled === 0) this.settledWake?.();
  }

  private async shutdown(): Promise<void> {
    const settled = () =>
      this.unsettled === 0 ? Promise.resolve(true) : new Promise<boolean>((resolve) => (this.settledWake = () => resolve(true)));
    const timer = (ms: number) => new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms).unref());
    if (await Promise.race([settled(), timer(this.shutdownTimeout)])) return;
    for (const r of this.runs.values()) if (!r.ended) abort(r, new ShutdownError());
    if (await Promise.race([settled(), timer(this.shutdownGrace)])) return;
    // Handlers that outlast the grace period too: hand their jobs back from
    // under them, the last resort.
    const rs = [...this.runs.values()].filter((r) => !r.ended);
    for (const r of rs) r.ended = true;
    if (rs.length > 0) {
      this.log.warn(`rota: ${rs.length} handlers still running after the shutdown grace period; handing their jobs back anyway`);
      try {
        const errs = await this.client.finish(rs.map((r) => ({ id: r.id, token: r.token, as: "release" })));
        errs.forEach((e, i) => this.emit("finish", { job: rs[i].job, as: "release", error: e } satisfies FinishReport));
      } catch (err) {
        this.log.error(`rota: handing back unfinished jobs failed; they run again when their leases expire: ${(err as Error).message}`);
      }
      for (const r of rs) {
        this.forget(r);
        this.settle(r);
      }
    }
    await settled(); // finishes still being tried end with their leases at the latest
  }

  /** watch follows the event stream to stop handlers whose jobs are cancelled or taken back. */
  private async watch(types: string[], signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        for await (const ev of this.client.subscribe({ types, running: false, completed: false, signal })) {
          if (!ev.removed && ev.state === "running") continue;
          const r = this.runs.get(ev.id);
          if (!r || ev.lease !== (r.tag ??= leaseTag(r.token))) continue; // only changes about this run's own lease
          if (ev.removed || ev.state === "cancelled") {
            abort(r, new CanceledError(`job ${ev.id} was ${ev.removed ? "removed" : "cancelled"}`, "canceled", 0));
          } else if (!r.ended) {
            abort(r, new LeaseLostError(`job ${ev.id} was taken back (it is ${ev.state})`));
          }
        }
      } catch (err) {
        if (signal.aborted) return;
        this.log.warn(`rota: event stream failed; following it again: ${(err as Error).message}`);
        await sleep(1000, signal);
      }
    }
  }

  /**
   * heartbeatLoop extends the leases of jobs running or leased ahead, in
   * one request, each when a third of its lease has passed; a job whose
   * lease runs out before one gets through is stopped (LeaseLostError).
   */
  private async heartbeatLoop(signal: AbortSignal): Promise<void> {
    let backoff = 0;
    let retryAt = 0;
    while (!signal.aborted) {
      const now = Date.now();
      let next = 1000;
      const due: Run[] = [];
      for (const r of this.runs.values()) {
        if (r.ended) continue;
        const left = r.leaseUntil - now;
        if (left <= 0) {
          if (r.reason === undefined) {
            this.log.error(`rota: job ${r.id} (${r.job.type}): lease lost: it ran out before a heartbeat extended it; stopping the job`);
            abort(r, new LeaseLostError("the lease ran out before a heartbeat extended it"));
          }
          continue;
        }
        if (left < (r.leaseLen * 2) / 3) due.push(r);
        next = Math.min(next, Math.max(r.leaseLen / 4, 5), left);
      }
      if (due.length === 0) {
        backoff = 0;
      } else if (now >= retryAt) {
        if (await this.beat(due)) {
          backoff = 0;
        } else {
          backoff = Math.min(Math.max(2 * backoff, retryFirst), retryMax);
          for (const r of due) backoff = Math.min(backoff, Math.max(r.leaseLen / 4, 5));
          retryAt = Date.now() + backoff;
        }
      }
      if (backoff > 0) next = Math.min(next, Math.max(retryAt - Date.now(), 5));
      await new Promise<void>((resolve) => {
        const t = setTimeout(done, next);
        function done() {
          clearTimeout(t);
          resolve();
        }
        this.kick = done;
      });
      this.kick = undefined;
    }
  }

  /** beat sends heartbeats and applies their answers; it reports whether none needs trying again. */
  private async beat(rs: Run[], progress?: number): Promise<boolean> {
    const items: HeartbeatItem[] = rs.map((r) => ({ id: r.id, token: r.token, progress }));
    let res;
    try {
      res = await this.client.heartbeat(items, { signal: AbortSignal.timeout(60000) });
    } catch (err) {
      if (refused(err)) {
        this.refuse(err);
        if (progress !== undefined) throw err;
        return true; // no retry can help
      }
      this.log.warn(`rota: heartbeat of ${rs.length} jobs failed; trying again while the leases hold: ${(err as Error).message}`);
      if (progress !== undefined) throw err;
      return false;
    }
    let ok = true;
    res.forEach((hr, i) => {
      const r = rs[i];
      if (!hr.error) {
        if (hr.lease_until) r.leaseUntil = Date.parse(hr.lease_until) + r.skew;
        return;
      }
      if (hr.error.code === "canceled") {
        abort(r, new CanceledError(`job ${r.id}: ${hr.error.message}`, "canceled", 0));
      } else if (hr.error.code === "worker_conflict" || hr.error.code === "not_found" || hr.error.code === "finished") {
        abort(r, new LeaseLostError(`job ${r.id}: ${hr.error.message}`));
      } else {
        ok = false;
      }
      if (progress !== undefined) throw new RotaError(hr.error.message, hr.error.code, 0);
    });
    return ok;
  }

  private async progress(r: Run, percent: number): Promise<void> {
    if (!Number.isFinite(percent) || percent < 0 || percent > 100) {
      throw new TypeError(`rota: progress ${percent}: want a number in 0..100`);
    }
    if (r.reason !== undefined) throw r.reason;
    await this.beat([r], percent);
  }
}

/** abort ends r's claim on its job with reason, once: the first reason stays. */
function abort(r: Run, reason: Error): void {
  if (r.reason !== undefined) return;
  r.reason = reason;
  r.ac?.abort(reason);
}

/** signalOf is r's handler's signal, made on first use. */
function signalOf(r: Run): AbortSignal {
  if (!r.ac) {
    r.ac = new AbortController();
    if (r.reason !== undefined) r.ac.abort(r.reason);
  }
  return r.ac.signal;
}

/** refused reports whether the server refused the worker's credentials. */
function refused(err: unknown): err is RotaError {
  return err instanceof UnauthorizedError || err instanceof ForbiddenError;
}

function retryable(err: Error): boolean {
  return !(
    err instanceof WorkerConflictError ||
    err instanceof CanceledError ||
    err instanceof NotFoundError ||
    err instanceof FinishedError ||
    err instanceof InvalidInputError ||
    err instanceof TooLargeError ||
    err instanceof ForbiddenError ||
    err instanceof UnauthorizedError
  );
}

function errorText(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  return String(err);
}

function average(old: number, d: number): number {
  const next = old === 0 ? d : old + (d - old) / 8;
  return Math.max(next, 0.001);
}

const fnvPrime = 0x100000001b3n;
const mask64 = 0xffffffffffffffffn;

/** leaseTag is the fingerprint of a lease token that events carry (FNV-1a, 64 bits, hex), as the server's. */
export function leaseTag(token: string): string {
  if (token === "") return "";
  let h = 0xcbf29ce484222325n;
  for (const b of Buffer.from(token, "utf8")) {
    h ^= BigInt(b);
    h = (h * fnvPrime) & mask64;
  }
  return h.toString(16);
}

/**
 * Batcher sends items in shared calls: while one is in flight, new items
 * queue, and the next call carries them all (up to max). No timer: a lone
 * item goes out at once; under load, items share requests.
 */
export class Batcher<P, R> {
  private queue: Array<{ item: P; resolve: (r: R) => void; reject: (e: unknown) => void }> = [];
  private busy = false;
  constructor(
    private readonly max: number,
    private readonly send: (items: P[]) => Promise<R[]>,
  ) {}

  do(item: P): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (!this.busy) void this.loop();
    });
  }

  private async loop(): Promise<void> {
    this.busy = true;
    while (this.queue.length > 0) {
      const calls = this.queue.splice(0, this.max);
      try {
        const res = await this.send(calls.map((c) => c.item));
        calls.forEach((c, i) => c.resolve(res[i]));
      } catch (err) {
        for (const c of calls) c.reject(err);
      }
    }
    this.busy = false;
  }
}
