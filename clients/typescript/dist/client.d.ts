import type { AcceptRequest, AppendLogsRequest, AppendLogsResponse, GetJobLogsQuery, LogsResponse, AddRequest, Batch, BatchRequest, BatchesResponse, ListBatchesQuery, CreateTokenRequest, CreateTokenResponse, DepsResponse, Event, FinishItem, GroupConfig, HeartbeatItem, HeartbeatResult, HistoryEntry, Job, ListJobsQuery, ListResponse, Outcome, ResubmitRequest, State, StatsResponse, Token, TypeConfig, UpdateRequest } from "./openapi.js";
import { RotaError } from "./errors.js";
import { Transport } from "./transport.js";
/** ClientOptions says where the server is and how to reach it. */
export interface ClientOptions {
    /** The server's address, such as "http://127.0.0.1:7700". */
    url: string;
    /** Sent as "Authorization: Bearer <token>": the admin token or a named one. */
    token?: string;
    /**
     * PEM certificate(s) of the authority that signed an https:// server's
     * certificate, trusted for this client only, besides Node's roots.
     */
    ca?: string | Buffer | Array<string | Buffer>;
}
/** A job as an add or resubmit left it, and what the call did. */
export type AddedJob = Job & {
    outcome: Outcome;
};
/** A time as the API takes it: an RFC 3339 string, or a Date. */
export type TimeInput = string | Date;
/** What add takes: AddRequest, with run_at and expires_at also as Dates. */
export type AddInput = Omit<AddRequest, "run_at" | "expires_at"> & {
    run_at?: TimeInput;
    expires_at?: TimeInput;
};
/** What list takes: ListJobsQuery, with updated_since also as a Date. */
export type ListInput = Omit<ListJobsQuery, "updated_since"> & {
    updated_since?: TimeInput;
};
/** A batch to add: its first jobs, its callbacks and whether it stays open. */
export type BatchInput = Omit<BatchRequest, "jobs" | "on_complete" | "on_success"> & {
    jobs?: AddInput[];
    on_complete?: AddInput;
    on_success?: AddInput;
};
/** A batch with the jobs the call added (in order, each with its outcome). */
export type BatchWithJobs = Batch & {
    jobs: AddedJob[];
};
/** What subscribe takes. */
export interface SubscribeOptions {
    /** Follow this one job: its state now, each change, and the stream ends after it ends. */
    job?: number;
    /** Follow the jobs of these type patterns (GLOB); all types when neither is given. */
    types?: string[];
    /** false leaves out jobs starting to run and their progress. */
    running?: boolean;
    /** false leaves out jobs completing. */
    completed?: boolean;
    /** Resume after this event id (an earlier stream's lastEventId). */
    lastEventId?: string;
    /** Ends the stream. */
    signal?: AbortSignal;
    /**
     * Called when the server could not replay what changed while the stream
     * was away (too much, or the store failed): read the jobs again.
     */
    onReset?: (reason: string) => void;
}
/** An event stream: an async iterator of changes that remembers how far it got. */
export interface Subscription extends AsyncIterableIterator<Event> {
    /** The id of the last event received: where a new stream resumes. */
    readonly lastEventId: string | undefined;
}
/**
 * Client talks to a rota server over its HTTP API. Every call returns a
 * promise; errors are RotaError subclasses named after the API's codes.
 */
export declare class Client {
    readonly transport: Transport;
    constructor(opts: ClientOptions);
    /** close ends the client's idle connections. */
    close(): void;
    private op;
    /** add adds a job and answers it, with its id and what the add did. */
    add(job: AddInput, opts?: {
        signal?: AbortSignal;
    }): Promise<AddedJob>;
    /** addMany adds jobs in one transaction (all or none), in order. */
    addMany(jobs: AddInput[], opts?: {
        signal?: AbortSignal;
    }): Promise<AddedJob[]>;
    /**
     * addBatch adds a batch of jobs in one transaction (all or none) with
     * callbacks: on_complete is added once every job has ended, on_success
     * once every job completed; each callback's data gets the batch under
     * "batch". Keep it open to add jobs with addBatchJobs, then closeBatch.
     */
    addBatch(batch: BatchInput, opts?: {
        signal?: AbortSignal;
    }): Promise<BatchWithJobs>;
    /** addBatchJobs adds jobs to a batch that is not done (FinishedError when it is). */
    addBatchJobs(id: number, jobs: AddInput[], opts?: {
        signal?: AbortSignal;
    }): Promise<BatchWithJobs>;
    /** getBatch answers a batch: its counts by outcome, whether it is done, and its callbacks' jobs. */
    getBatch(id: number, opts?: {
        signal?: AbortSignal;
    }): Promise<Batch>;
    /** listBatches answers a page of batches, newest first; pass next_cursor back as before. */
    listBatches(query?: ListBatchesQuery, opts?: {
        signal?: AbortSignal;
    }): Promise<BatchesResponse>;
    /** closeBatch closes an open batch: it is done once its jobs have ended. */
    closeBatch(id: number, opts?: {
        signal?: AbortSignal;
    }): Promise<Batch>;
    /** get answers a job; NotFoundError when there is none. */
    get(id: number, opts?: {
        signal?: AbortSignal;
    }): Promise<Job>;
    /**
     * logs answers a page of a job's log: by default the latest attempt that
     * logged, from its first record (pass next back as after for the next
     * page); attempts sums up every attempt's (records kept and dropped).
     */
    logs(id: number, query?: GetJobLogsQuery, opts?: {
        signal?: AbortSignal;
    }): Promise<LogsResponse>;
    /**
     * deps answers a job's place in its workflow: the jobs it was added after
     * (after, after_keys) with their outcomes, in the order it named them, and
     * the ids of up to limit jobs added after it.
     */
    deps(id: number, opts?: {
        limit?: number;
        signal?: AbortSignal;
    }): Promise<DepsResponse>;
    /**
     * history answers a job's history, oldest first: what its row tells (added,
     * each attempt's start and error, its end) and the audit trail, every change
     * made to it and to its type's and group's settings, with the name of the
     * token that made it (actor) and what changed (detail). A removed job's
     * history is its audit records; a job out of the token's reach is a
     * NotFoundError.
     */
    history(id: number, opts?: {
        signal?: AbortSignal;
    }): Promise<HistoryEntry[]>;
    /** list answers one page of jobs; pass next_cursor back as cursor for the next. */
    list(query?: ListInput, opts?: {
        signal?: AbortSignal;
    }): Promise<ListResponse>;
    /** listAll answers every job the query matches, page by page. */
    listAll(query?: Omit<ListInput, "cursor">, opts?: {
        signal?: AbortSignal;
    }): AsyncGenerator<Job>;
    /** cancel cancels a job (a running one when its worker learns of it) and answers it. */
    cancel(id: number, opts?: {
        signal?: AbortSignal;
    }): Promise<Job>;
    /** resubmit asks for a job to run again (an ended one at once, a running one after its run). */
    resubmit(id: number, req?: Omit<ResubmitRequest, "run_at"> & {
        run_at?: TimeInput;
    }, opts?: {
        signal?: AbortSignal;
    }): Promise<AddedJob>;
    /** update changes a pending or paused job in place and answers it. */
    update(id: number, req: Omit<UpdateRequest, "run_at"> & {
        run_at?: TimeInput;
    }, opts?: {
        signal?: AbortSignal;
    }): Promise<Job>;
    /** remove deletes a job (a running one is cancelled first). */
    remove(id: number, opts?: {
        signal?: AbortSignal;
    }): Promise<void>;
    /**
     * wait answers the job once it is in one of `states` (by default once it
     * has ended: completed, failed or cancelled), following it on the event
     * stream, as couch_jobs' wait does. NotFoundError when it is removed
     * first; FinishedError when it ends in a state not asked for (it can
     * never reach one of them then).
     */
    wait(id: number, opts?: {
        states?: State[];
        signal?: AbortSignal;
    }): Promise<Job>;
    /** stats counts jobs by type, group and state, and in total by state. */
    stats(opts?: {
        signal?: AbortSignal;
    }): Promise<StatsResponse>;
    /**
     * subscribe follows job changes on the server's event stream, as an async
     * iterator. A connection that drops is opened again with Last-Event-ID,
     * and the server replays what changed meanwhile (a change may come twice,
     * none is missed, except removals). Break out of the loop, or abort the
     * signal, to end it.
     */
    subscribe(opts?: SubscribeOptions): Subscription;
    /** types lists the types the server knows, with their settings. */
    types(opts?: {
        signal?: AbortSignal;
    }): Promise<TypeConfig[]>;
    /** setType replaces a type's settings. */
    setType(cfg: TypeConfig & {
        type: string;
    }, opts?: {
        signal?: AbortSignal;
    }): Promise<TypeConfig>;
    /** groups lists the groups' settings. */
    groups(opts?: {
        signal?: AbortSignal;
    }): Promise<GroupConfig[]>;
    /** setGroup sets a group's settings (for one type, or all). */
    setGroup(cfg: GroupConfig, opts?: {
        signal?: AbortSignal;
    }): Promise<GroupConfig>;
    /** createToken creates a named token and answers it with its secret, shown this once. */
    createToken(req: CreateTokenRequest, opts?: {
        signal?: AbortSignal;
    }): Promise<CreateTokenResponse>;
    /** tokens lists the named tokens, without their secrets. */
    tokens(opts?: {
        signal?: AbortSignal;
    }): Promise<Token[]>;
    /** revokeToken revokes a named token. */
    revokeToken(name: string, opts?: {
        signal?: AbortSignal;
    }): Promise<void>;
    /** openapi answers the server's OpenAPI document. */
    openapi(opts?: {
        signal?: AbortSignal;
    }): Promise<Record<string, unknown>>;
    /** accept leases due jobs of some types, each with its token, waiting up to req.wait for some. */
    accept(req: AcceptRequest, opts?: {
        signal?: AbortSignal;
    }): Promise<Job[]>;
    /** heartbeat extends leases, one answer per item (an item's error in its result). */
    heartbeat(items: HeartbeatItem[], opts?: {
        signal?: AbortSignal;
    }): Promise<HeartbeatResult[]>;
    /**
     * appendLogs appends records to the log of the attempt the token holds
     * (the server keeps at most 64 KiB an attempt and counts the rest as
     * dropped); WorkerConflictError or CanceledError when the lease is lost.
     */
    appendLogs(id: number, req: AppendLogsRequest, opts?: {
        signal?: AbortSignal;
    }): Promise<AppendLogsResponse>;
    /**
     * finish ends leases (complete, fail, snooze, release, cancel), and
     * answers each item's error, or undefined where it succeeded.
     */
    finish(items: FinishItem[], opts?: {
        signal?: AbortSignal;
    }): Promise<Array<RotaError | undefined>>;
}
