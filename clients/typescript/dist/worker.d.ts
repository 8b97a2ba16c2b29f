import { EventEmitter } from "node:events";
import type { Client } from "./client.js";
import type { Ending, Job } from "./openapi.js";
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
/**
 * A handler runs one job: what it returns is the job's result (undefined
 * for none); what it throws fails the attempt, which retries with back-off
 * until the job runs out of attempts. Throw permanent(…) to fail the job
 * for good, snooze(ms) to run it again later without using up an attempt,
 * or cancelJob(…) to cancel it.
 */
export type Handler = (job: Job, ctx: JobContext) => unknown | Promise<unknown>;
/** The lease was lost: the job is no longer this worker's. */
export declare class LeaseLostError extends Error {
    constructor(message?: string);
}
/** The worker is shutting down and its shutdown timeout passed. */
export declare class ShutdownError extends Error {
    constructor(message?: string);
}
/** Thrown by a handler: fail the job without further retries. */
export declare class PermanentError extends Error {
    constructor(message: string, options?: {
        cause?: unknown;
    });
}
/** Thrown by a handler: run the job again after delayMs, without using up an attempt. */
export declare class SnoozeError extends Error {
    readonly delayMs: number;
    constructor(delayMs: number);
}
/** Thrown by a handler: cancel the job. */
export declare class CancelJobError extends Error {
    constructor(message: string);
}
/** permanent returns an error that, thrown, fails the job for good. */
export declare function permanent(err: unknown): PermanentError;
/** snooze returns an error that, thrown, runs the job again after ms. */
export declare function snooze(ms: number): SnoozeError;
/** cancelJob returns an error that, thrown, cancels the job. */
export declare function cancelJob(reason: string): CancelJobError;
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
export declare class Worker extends EventEmitter {
    readonly client: Client;
    readonly name: string;
    private readonly concurrency;
    private readonly prefetch;
    private readonly leaseTimeout?;
    private readonly pollWait;
    private readonly shutdownTimeout;
    private readonly shutdownGrace;
    private readonly log;
    private readonly jobLogLevel;
    private readonly handlers;
    private readonly runs;
    private readonly queue;
    private readonly finisher;
    private handling;
    private leased;
    private finishing;
    private unsettled;
    private wake?;
    private settledWake?;
    private kick?;
    private paceRun;
    private paceAccept;
    private running;
    private refusal?;
    private halt?;
    constructor(client: Client, opts?: WorkerOptions);
    /** handle registers the handler of a job type. */
    handle(type: string, handler: Handler): this;
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
    run(opts?: RunOptions): Promise<void>;
    /** refuse stops the worker after the server refused a call with err: every later call would be refused alike. */
    private refuse;
    private acceptLoop;
    /** ahead is how many jobs to lease beyond the handler slots (see WorkerOptions.prefetch). */
    private ahead;
    private start;
    /** pump starts waiting jobs while handler slots are free. */
    private pump;
    private execute;
    /** jobLogger is the logger of r's handler (JobContext.log). */
    private jobLogger;
    /**
     * sendLog sends what r's log holds (all of it, and closes the log, when
     * last: the run ends, and its lease appends no more); a send already
     * under way is waited for when last, and left alone otherwise.
     */
    private sendLog;
    /** logLoop sends the running jobs' records every second. */
    private logLoop;
    /**
     * end sends r's ending, trying again with back-off while the error may
     * pass and the lease holds: a finish given up on leaves the job to run
     * again once its lease expires.
     */
    private end;
    private forget;
    private settle;
    private shutdown;
    /** watch follows the event stream to stop handlers whose jobs are cancelled or taken back. */
    private watch;
    /**
     * heartbeatLoop extends the leases of jobs running or leased ahead, in
     * one request, each when a third of its lease has passed; a job whose
     * lease runs out before one gets through is stopped (LeaseLostError).
     */
    private heartbeatLoop;
    /** beat sends heartbeats and applies their answers; it reports whether none needs trying again. */
    private beat;
    private progress;
}
/** leaseTag is the fingerprint of a lease token that events carry (FNV-1a, 64 bits, hex), as the server's. */
export declare function leaseTag(token: string): string;
/**
 * Batcher sends items in shared calls: while one is in flight, new items
 * queue, and the next call carries them all (up to max). No timer: a lone
 * item goes out at once; under load, items share requests.
 */
export declare class Batcher<P, R> {
    private readonly max;
    private readonly send;
    private queue;
    private busy;
    constructor(max: number, send: (items: P[]) => Promise<R[]>);
    do(item: P): Promise<R>;
    private loop;
}
