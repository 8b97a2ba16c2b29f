/** The version of the API document these types were generated from. */
export declare const apiVersion = "1";
/**
 * Which jobs to lease.
 */
export interface AcceptRequest {
    /**
     * Required. Type names or GLOB patterns, as SQLite's GLOB (Bedrock's GetJob):
     * * any run, ? one character, [abc] [a-z] [^abc] classes (a [ nothing closes
     * is a plain character; [?] matches ? exactly), and {a,b} alternatives.
     */
    types: string[];
    /**
     * The most jobs to lease; 0 or absent means 1.
     */
    limit?: number;
    /**
     * Accept jobs whose run_at is no later than this; now by default.
     */
    due_by?: Time;
    /**
     * Long poll: when no job is due, wait up to this long for one (returning as
     * soon as one is due). At most the server's maximum (60s by default); 0 or
     * absent returns at once.
     */
    wait?: Duration;
    /**
     * The caller's name, recorded on the jobs.
     */
    worker?: string;
    /**
     * Overrides the types' lease timeout when positive.
     */
    lease_timeout?: Duration;
    /**
     * Accept only jobs of this priority (Bedrock's GetJob with jobPriority); the
     * fair order holds among them.
     */
    priority?: number;
}
/**
 * Leased jobs, each with its token.
 */
export interface AcceptResponse {
    /**
     * The leased jobs, each running with a fresh token; empty when none was due.
     */
    jobs: Job[];
}
/**
 * Several jobs to add at once.
 */
export interface AddBatchRequest {
    /**
     * Jobs to add in one transaction: if any is invalid, none is added.
     */
    jobs: AddRequest[];
}
/**
 * The answer to a batch add.
 */
export interface AddBatchResponse {
    /**
     * One result per job, in request order.
     */
    results: AddResponse[];
}
/**
 * One job to add.
 */
export interface AddRequest {
    /**
     * Required. The job type: 1..255 bytes of UTF-8 without control characters
     * (any other character, as Bedrock's job names: paths, ?, *, [, commas).
     */
    type: string;
    /**
     * Unique within the type and group: adding a job whose type, group and key
     * exist re-adds that job (see Outcome). The same key in another group is
     * another job.
     */
    key?: string;
    /**
     * Fairness group; "" by default.
     */
    group?: string;
    /**
     * Higher runs first; 0 by default.
     */
    priority?: number;
    /**
     * When the job becomes due; now by default.
     */
    run_at?: Time;
    /**
     * The job's input; must be a JSON object (at most 1 MiB). {} by default.
     */
    data?: {
        [key: string]: unknown;
    };
    /**
     * Most attempts; 0 or absent means 20.
     */
    max_attempts?: number;
    /**
     * Base of the retry delay base·2^(attempt−1), ±10% jitter; 1s by default.
     */
    backoff_base?: Duration;
    /**
     * Cap of the retry delay; 1h by default. Must not be less than backoff_base.
     */
    backoff_max?: Duration;
    /**
     * Small string pairs carried with the job beside its data, for infrastructure
     * rather than the handler: a W3C trace context (traceparent, tracestate),
     * routing hints. At most 32 keys and 4096 bytes of keys and values; keys are
     * 1..255 bytes without control characters, values valid UTF-8. A re-add with
     * meta replaces the job's; without, keeps it.
     */
    meta?: {
        [key: string]: string;
    };
    /**
     * Makes the job recurring. Either a Bedrock repeat: a base SCHEDULED (the slot
     * the job stood for), STARTED or FINISHED, then comma-separated modifiers
     * applied in turn, +N|-N SECONDS|MINUTES|HOURS|DAYS|MONTHS|YEARS, START OF
     * HOUR|DAY|MONTH|YEAR, WEEKDAY N (0 is Sunday), case-insensitive ("SCHEDULED,
     * +1 HOUR"); or HOURLY, DAILY, WEEKLY. Or a cron expression: 5 fields or a
     * descriptor (@hourly, @daily, @every 90s), with an optional CRON_TZ=Zone
     * prefix. When a run completes, or fails for good without permanent, the job
     * is pending again at its next slot, its data as the run left it. Without
     * run_at a repeat runs first now, a cron expression at its first match. A
     * malformed schedule is refused with a 400 that names the wrong part. A re-add
     * with the same schedule keeps the job's next slot.
     */
    schedule?: string;
    /**
     * What the recurring job does about slots it missed; once by default.
     */
    missed?: Missed;
    /**
     * Gives every run a fixed lease of this length (at least 1ms) that heartbeats
     * do not extend, Bedrock's retryAfter: a run not finished by then is taken
     * back and the job runs again, up to max_attempts runs (10 when max_attempts
     * is absent), after which it fails with an error that says so. It wins over
     * the type's and the accept's lease timeout.
     */
    retry_after?: Duration;
    /**
     * Bounds each run (at least 1ms): a run that lasts longer is stopped (an
     * in-process handler's context is cancelled, a remote worker's next heartbeat
     * is refused with worker_conflict, and the server takes the job back even
     * while its worker sends heartbeats) and counts as a failed attempt with the
     * error "timed out after …", retried after the job's back-off while it has
     * attempts left. A lease never outlasts it.
     */
    timeout?: Duration;
    /**
     * The job's deadline: a job not started by then is never started. It ends
     * cancelled with expired set and last_error "expired at …, not started" (an
     * event with expired set says so), or, when recurring, skips to its next slot,
     * whose deadline is as far after that slot as expires_at is after the first
     * run_at. A run under way is not stopped (timeout bounds runs), but a retry
     * due after the deadline is not started. A deadline that has passed already is
     * accepted: the job expires at once. Must be after run_at when run_at is given
     * (invalid_input otherwise).
     */
    expires_at?: Time;
    /**
     * Return the existing job of this type in this group that has not completed
     * (pending, running, paused, failed or cancelled), if there is one, instead of
     * adding another: Bedrock's unique by name; a job of another group is never
     * found. The outcome is then unchanged, or updated with overwrite. Not with
     * key.
     */
    unique?: boolean;
    /**
     * With unique, when the existing job's data differ: merge this add's data into
     * them (JSON merge patch, RFC 7396: key order kept, new keys appended, null
     * removes a key) and set the job's priority and schedule to this add's (absent
     * ones clear them); its state and run time stay.
     */
    overwrite?: boolean;
    /**
     * Makes the job a child of this job, which must be running (the child is then
     * paused until the parent's run ends) or paused waiting for its children (the
     * child is pending at once). A parent whose run completes while it has
     * unfinished children is paused until the last of them ends (completes, fails
     * for good, is cancelled or removed); it then runs again and accept gives it
     * those children (Job.children), which are deleted when that run completes. A
     * parent that fails for good or is cancelled cancels its unfinished children;
     * a removed one takes them with it. A child cannot have children: 400. An
     * unknown parent, or one out of the token's reach (answered alike): 404.
     */
    parent?: number;
    /**
     * A unique window (1ms to 366 days): when a job of this type in this group
     * with this add's key, or, without a key, with the same data (normalized
     * JSON), was created less than this long ago and is in one of unique_states,
     * the add returns that job unchanged instead of adding one (outcome unchanged:
     * the add was deduplicated); within the window a keyed add does not re-add the
     * job. Past the window the add goes on as any other. Adds of one type, group
     * and key (or data) are serialised across nodes, so concurrent adds make one
     * job. Not with unique.
     */
    unique_for?: Duration;
    /**
     * With unique_for: the states a job must be in to be found. Absent: any state
     * but cancelled (a job that completed within the window still counts, a
     * throttle).
     */
    unique_states?: State[];
    /**
     * Debounce (1ms to 366 days; needs key, not with run_at, unique or
     * unique_for): the job runs this long after the add, and another add of the
     * key before then replaces the pending job's data and pushes its run time to
     * this long after that add (outcome updated: the add was debounced); the last
     * add wins, and the job runs once the adds stop. A running job is resubmitted,
     * an ended one requeued, as for any re-add.
     */
    debounce?: Duration;
    /**
     * Jobs this one runs after: it is added waiting until every one of them has
     * ended (completed, failed for good, cancelled or removed), then becomes
     * pending, due at run_at or at once when that has passed. Each must exist and
     * be in the token's reach: an unknown one is 404 naming it, and nothing of the
     * add is added. One that has already ended counts as ended. A graph is acyclic
     * by construction. Not with parent, schedule or debounce. A re-add by key
     * keeps the job's dependencies as they were.
     */
    after?: number[];
    /**
     * In a batch add, earlier jobs of the same batch this one runs after, by their
     * key (the latest earlier job with that key), so that a whole workflow is
     * added in one atomic call. A key no earlier job of the batch has: 400.
     */
    after_keys?: string[];
    on_dep_failure?: DepPolicy;
    /**
     * Makes the job a member of this batch, which must not be done (POST
     * /v1/batches): the batch's callbacks wait for it to end. A job that the add
     * finds instead of inserting (its key's holder, a unique match) does not join.
     */
    batch?: number;
}
/**
 * The answer to one add or resubmit.
 */
export interface AddResponse {
    /**
     * The job as stored (without its token).
     */
    job: Job;
    outcome: Outcome;
}
/**
 * Appends records to the log of the attempt the token holds.
 */
export interface AppendLogsRequest {
    /**
     * Required. The lease token that accept returned.
     */
    token: string;
    /**
     * Required. The records, oldest first (at most 10,000 in one append).
     */
    records: LogRecord[];
    /**
     * Records the worker dropped itself (it bounds its buffer as the server bounds
     * the attempt's log); added to the attempt's count of dropped records.
     */
    dropped?: number;
}
/**
 * How many of the records the server kept, and how many it dropped past the
 * attempt's bound (64 KiB: a record counts its message and attributes plus 32
 * bytes; once one is dropped every later one is).
 */
export interface AppendLogsResponse {
    /**
     * Records kept.
     */
    kept: number;
    /**
     * Records dropped past the bound.
     */
    dropped: number;
}
/**
 * The error one attempt ended with.
 */
export interface AttemptError {
    /**
     * The attempt that failed (1-based).
     */
    attempt: number;
    /**
     * When the attempt ended.
     */
    at: Time;
    /**
     * The error the attempt ended with.
     */
    error: string;
}
/**
 * A batch of jobs with callbacks. It is done once it is closed (not open) and
 * every member has ended; its callbacks were then added, and its counts no
 * longer change.
 */
export interface Batch {
    /**
     * The batch's id.
     */
    id: number;
    /**
     * Its note; absent when none.
     */
    description?: string;
    counts: BatchCounts;
    /**
     * Waits for a close before it can be done.
     */
    open: boolean;
    /**
     * Every member ended after the batch closed, and the callbacks were added.
     */
    done: boolean;
    /**
     * When it became done; absent until then.
     */
    done_at?: Time;
    /**
     * The callback added once every member has ended; absent when none.
     */
    on_complete?: AddRequest;
    /**
     * The callback added once every member completed; absent when none.
     */
    on_success?: AddRequest;
    /**
     * The job on_complete added, once done; absent otherwise.
     */
    complete_job?: number;
    /**
     * The job on_success added, once done; absent otherwise (or when a member did
     * not complete).
     */
    success_job?: number;
    created_at: Time;
}
/**
 * A batch's members by where they are: remaining have not ended; the others
 * ended as named (removed: removed before they ended; a retry is not an
 * ending). total is every job that joined.
 */
export interface BatchCounts {
    /**
     * Every member that joined.
     */
    total: number;
    /**
     * Members that have not ended (pending, running, paused, or waiting for a
     * retry).
     */
    remaining: number;
    /**
     * Members that completed.
     */
    completed: number;
    /**
     * Members that failed for good.
     */
    failed: number;
    /**
     * Members that were cancelled.
     */
    cancelled: number;
    /**
     * Members removed before they ended.
     */
    removed: number;
}
/**
 * A batch to add: its first jobs, added in one transaction with it (if any is
 * invalid, nothing is added), and its callbacks.
 */
export interface BatchRequest {
    /**
     * The first members (at most 10,000: add more with POST /v1/batches/{id}/jobs
     * while the batch is open). A job may not name a batch: it joins this one. A
     * batch without jobs and not open is done at once.
     */
    jobs?: AddRequest[];
    /**
     * A job added once every member has ended, however it ended, exactly once. Its
     * data (a JSON object) gets the batch under "batch": {"id", "counts",
     * "callback": "complete"}; it may not have a field "batch" of its own. It may
     * run after other jobs (after; one removed before the batch is done counts as
     * removed, and its on_dep_failure applies), not as a child: a parent is
     * refused (invalid), since it may have ended by then.
     */
    on_complete?: AddRequest;
    /**
     * A job added once every member completed (so not when one failed, was
     * cancelled or removed), exactly once, with the batch in its data as
     * on_complete's ("callback": "success").
     */
    on_success?: AddRequest;
    /**
     * Keeps the batch open for more jobs until POST /v1/batches/{id}/close: its
     * callbacks wait for the close. Without it, jobs can still join while a member
     * has not ended (a member's handler adds jobs to its own batch).
     */
    open?: boolean;
    /**
     * A note shown with the batch.
     */
    description?: string;
}
/**
 * A batch, with the results of the jobs the request added (in request order;
 * absent when it added none).
 */
export interface BatchResponse {
    batch: Batch;
    /**
     * The jobs the request added, in request order.
     */
    results?: AddResponse[];
}
/**
 * A page of batches, newest first.
 */
export interface BatchesResponse {
    batches: Batch[];
    /**
     * Passed as ?before= for the next page; absent on the last.
     */
    next_cursor?: string;
}
/**
 * A child job as its parent's run sees it.
 */
export interface Child {
    id: number;
    state: State;
    /**
     * The child's data as its run left them.
     */
    data: {
        [key: string]: unknown;
    };
    /**
     * The child's result, when it completed (any JSON value).
     */
    result?: unknown;
    /**
     * The child's last error, when it failed.
     */
    last_error?: string;
}
/**
 * How many jobs of one type and group are in one state.
 */
export interface Count {
    type: string;
    group: string;
    state: State;
    jobs: number;
    /**
     * How many of these jobs (ended ones) are past their type's retention, waiting
     * for the sweep to delete them; absent when none.
     */
    expired?: number;
}
/**
 * A named token to create.
 */
export interface CreateTokenRequest {
    /**
     * The token's name, unique.
     */
    name: string;
    /**
     * GLOB patterns of the groups whose jobs it reaches; absent or empty means
     * every group.
     */
    groups?: string[];
    /**
     * GLOB patterns of the types whose jobs it reaches; absent or empty means
     * every type.
     */
    types?: string[];
    /**
     * It reads but changes nothing.
     */
    read_only?: boolean;
}
/**
 * A new token and its secret, shown this once.
 */
export interface CreateTokenResponse {
    token: Token;
    /**
     * The bearer token to send: rota_ and 43 characters of base64url.
     */
    secret: string;
}
/**
 * A dependency's outcome, as the job added after it sees it when it runs.
 */
export interface Dep {
    id: number;
    /**
     * Empty when removed.
     */
    type?: string;
    key?: string;
    group?: string;
    state: State;
    /**
     * The dependency was deleted (removed, or by retention) before the job ran:
     * its type, key, result and error are no longer known; state is cancelled.
     */
    removed?: boolean;
    /**
     * The dependency's result, when it completed (any JSON value).
     */
    result?: unknown;
    /**
     * The dependency's last error, when it did not complete.
     */
    error?: string;
}
/**
 * What a job added after others does when one of them fails for good, is
 * cancelled or is removed. cancel (the default): it is cancelled, its last
 * error naming the dependency, and so are its own dependants under the same
 * policy, down the graph. run: it runs once the rest have ended, and sees
 * every outcome (Job.deps).
 */
export type DepPolicy = "cancel" | "run";
/** Every DepPolicy, in the document's order. */
export declare const depPolicyValues: readonly DepPolicy[];
/**
 * A job's dependencies and dependants.
 */
export interface DepsResponse {
    /**
     * The job's dependencies with their outcomes, in the order it named them; one
     * out of the token's reach shows its id and state alone.
     */
    deps: Dep[];
    /**
     * The ids of the jobs added after this one that are in the token's reach, in
     * id order, at most limit.
     */
    dependants: number[];
}
/**
 * A duration in Go syntax: decimal numbers, each with a unit (ns, us, ms, s,
 * m, h), such as "1.5s", "10m" or "1h30m". Zero is "0s" (or "0").
 */
export type Duration = string;
/**
 * How a worker ends its hold on a job: complete (done, result stored); fail
 * (retried with back-off unless permanent or out of attempts); snooze (pending
 * again at run_at, the attempt is given back); release (pending again at once,
 * the attempt is given back; used on shutdown); cancel (the worker cancels the
 * job).
 */
export type Ending = "complete" | "fail" | "snooze" | "release" | "cancel";
/** Every Ending, in the document's order. */
export declare const endingValues: readonly Ending[];
/**
 * What failed.
 */
export interface Error {
    code: ErrorCode;
    /**
     * What went wrong, for people; it names the offending field or value.
     */
    message: string;
}
/**
 * A stable, matchable error code. invalid_input (400): the request is
 * malformed or asks for something impossible; not_found (404): no such job or
 * endpoint; worker_conflict (409): the lease token is stale or the job is not
 * running; canceled (409): the job was cancelled or removed while the caller
 * held it; finished (409): the job has already ended; too_large (413): the
 * body is over the server's limit; unauthorized (401): no Authorization
 * header; forbidden (403): wrong token; method_not_allowed (405);
 * unsupported_media_type (415): a request body not labelled Content-Type:
 * application/json; too_many_requests (429): the named token has as many
 * requests in flight as one token may; unavailable (503): the store is closed
 * or unreachable; internal (500): anything else (the server log has the
 * details).
 */
export type ErrorCode = "invalid_input" | "not_found" | "worker_conflict" | "canceled" | "finished" | "too_large" | "unauthorized" | "forbidden" | "method_not_allowed" | "unsupported_media_type" | "too_many_requests" | "unavailable" | "internal";
/** Every ErrorCode, in the document's order. */
export declare const errorCodeValues: readonly ErrorCode[];
/**
 * The body of every error response.
 */
export interface ErrorResponse {
    error: Error;
}
/**
 * The data of a "job" Server-Sent Event: a committed change to a job (the
 * store's Change) and when it was sent.
 */
export interface Event {
    id: number;
    type: string;
    group: string;
    /**
     * The job's state after the change; for a removal, its last state.
     */
    state: State;
    /**
     * The job was removed.
     */
    removed?: boolean;
    /**
     * The change ends a run that failed: the job failed for good, or is pending
     * again for another attempt or its next slot (tells a retry from a job queued
     * anew).
     */
    failed?: boolean;
    /**
     * The change ends a job whose deadline (expires_at) passed before it started,
     * or moves a recurring job whose slot's deadline passed to its next slot.
     */
    expired?: boolean;
    /**
     * The job's progress (set with running changes).
     */
    progress: number;
    /**
     * Fingerprint of the lease the change concerns (empty when none). A worker
     * acts only on changes about its own lease; it reveals nothing of the token.
     */
    lease?: string;
    /**
     * The job's run_at, when pending.
     */
    run_at?: Time;
    /**
     * When the server sent the event.
     */
    at: Time;
}
/**
 * Records a failed attempt.
 */
export interface FailRequest {
    /**
     * Required. The lease token that accept returned.
     */
    token: string;
    /**
     * Why the attempt failed; recorded in errors and last_error.
     */
    error?: string;
    /**
     * Fail the job for good instead of retrying.
     */
    permanent?: boolean;
}
/**
 * Endings to apply in one call.
 */
export interface FinishBatchRequest {
    items: FinishItem[];
}
/**
 * The answer to a batch finish.
 */
export interface FinishBatchResponse {
    /**
     * One result per item, in request order.
     */
    results: ItemResult[];
}
/**
 * One ending in a batch finish.
 */
export interface FinishItem {
    id: number;
    /**
     * Required. The lease token that accept returned.
     */
    token: string;
    as: Ending;
    /**
     * The result (as = complete): any JSON value.
     */
    result?: unknown;
    /**
     * The reason (as = fail or cancel).
     */
    error?: string;
    /**
     * Fail for good (as = fail).
     */
    permanent?: boolean;
    /**
     * When a snoozed job runs again (as = snooze).
     */
    run_at?: Time;
    /**
     * Gives the job this new type for its next run (Bedrock's RetryJob with a
     * name); with snooze only.
     */
    rename?: string;
}
/**
 * Completes a job.
 */
export interface FinishRequest {
    /**
     * Required. The lease token that accept returned.
     */
    token: string;
    /**
     * The job's result: any JSON value (at most 1 MiB).
     */
    result?: unknown;
}
/**
 * A group's share of the workers, bound on running jobs and rate of starts,
 * for one type or (type absent) for all types.
 */
export interface GroupConfig {
    /**
     * The group (tenant); "" is the default group.
     */
    group: string;
    /**
     * The type the setting applies to; absent applies to every type: max_running
     * then bounds the group's running jobs of all types together, and weight
     * applies where no type-specific weight is set.
     */
    type?: string;
    /**
     * At most this many running jobs; absent or 0 means no bound.
     */
    max_running?: number;
    /**
     * The group's share relative to other groups while both have due jobs
     * (weighted round robin); absent or 0 means 1. A zero max_running and weight
     * remove the setting.
     */
    weight?: number;
    /**
     * The group is paused (for type, or for every type when type is absent): its
     * jobs wait until it is resumed. A setting with no max_running, weight, pause
     * or rate is removed.
     */
    paused?: boolean;
    /**
     * How many of the group's jobs (of type, or of every type together when type
     * is absent) start per second, minute or hour ("N/s", "N/m", "N/h"), across
     * every node; absent means no rate. It holds beside the type's rate: the
     * tighter one holds.
     */
    rate?: string;
    /**
     * How many jobs may start at once under rate; absent or 0 means the default: N
     * for a rate per second, else 1. Needs a rate.
     */
    burst?: number;
}
/**
 * Group settings.
 */
export interface GroupsResponse {
    /**
     * The settings, by group, then type.
     */
    groups: GroupConfig[];
}
/**
 * The server and its store are up.
 */
export interface HealthResponse {
    status: "ok";
}
/**
 * Leases to extend in one call.
 */
export interface HeartbeatBatchRequest {
    items: HeartbeatItem[];
}
/**
 * The answer to a batch heartbeat.
 */
export interface HeartbeatBatchResponse {
    /**
     * One result per item, in request order.
     */
    results: HeartbeatResult[];
}
/**
 * One lease to extend.
 */
export interface HeartbeatItem {
    id: number;
    /**
     * Required. The lease token that accept returned.
     */
    token: string;
    /**
     * Replaces the job's data; absent keeps it.
     */
    data?: {
        [key: string]: unknown;
    };
    /**
     * New progress in percent; absent keeps it.
     */
    progress?: number;
}
/**
 * Extends a lease.
 */
export interface HeartbeatRequest {
    /**
     * Required. The lease token that accept returned.
     */
    token: string;
    /**
     * Replaces the job's data; absent keeps it.
     */
    data?: {
        [key: string]: unknown;
    };
    /**
     * New progress in percent; absent keeps it.
     */
    progress?: number;
}
/**
 * The answer to one heartbeat.
 */
export interface HeartbeatResponse {
    /**
     * When the extended lease ends.
     */
    lease_until: Time;
    /**
     * A producer asked for the job to run again after this run.
     */
    resubmit: boolean;
}
/**
 * One item's answer in a batch heartbeat.
 */
export interface HeartbeatResult {
    /**
     * When the extended lease ends (on success).
     */
    lease_until?: Time;
    /**
     * A producer asked for the job to run again after this run.
     */
    resubmit?: boolean;
    /**
     * This item failed: worker_conflict (stale token, or the job is not running)
     * or canceled (cancelled or removed).
     */
    error?: Error;
}
/**
 * One line of a job's history: a fact of its row, or an audit record of a
 * change someone made.
 */
export interface HistoryEntry {
    /**
     * When it happened (the store's clock).
     */
    at: Time;
    /**
     * What happened: added, started, attempt failed, ended (the job's own life);
     * cancel, remove, update, retry, run now, resubmit, hand back (a change of the
     * job); pause type, resume type, set type, pause group, resume group, set
     * group (a change of its type's or group's settings).
     */
    action: string;
    /**
     * Who made the change: a token's name ("admin" for the admin token), the peer
     * of a Bedrock connection, or what a program named; absent for the job's own
     * life.
     */
    actor?: string;
    /**
     * The line is an audit record (a change someone made) rather than a fact of
     * the job's row.
     */
    audited?: boolean;
    /**
     * What the change did, such as "priority 0 → 5" or "pending → cancelled"; an
     * attempt's error.
     */
    detail?: string;
}
/**
 * A job's history, oldest first.
 */
export interface HistoryResponse {
    history: HistoryEntry[];
}
/**
 * One item's answer in a batch finish.
 */
export interface ItemResult {
    /**
     * This item failed: worker_conflict (stale token, or the job is not running)
     * or canceled (cancelled or removed). Absent on success.
     */
    error?: Error;
}
/**
 * One job. Fields that are empty or zero and marked optional are left out.
 */
export interface Job {
    /**
     * Assigned when the job is first added; never changes, not even on re-add or
     * resubmit.
     */
    id: number;
    /**
     * What kind of work this is, such as email.send.
     */
    type: string;
    /**
     * Optional caller-chosen id, unique within the type and group; absent when
     * none.
     */
    key?: string;
    /**
     * Fairness group, such as a tenant; "" by default.
     */
    group: string;
    /**
     * Higher runs first.
     */
    priority: number;
    state: State;
    /**
     * The job is not due before this time.
     */
    run_at: Time;
    /**
     * The job's input: a JSON object, opaque to rota.
     */
    data: {
        [key: string]: unknown;
    };
    /**
     * The current or most recent attempt; 0 before the first accept.
     */
    attempt: number;
    /**
     * The most attempts the job gets.
     */
    max_attempts: number;
    /**
     * Base of the exponential retry delay.
     */
    backoff_base: Duration;
    /**
     * Cap of the retry delay.
     */
    backoff_max: Duration;
    /**
     * The lease token. Only accept responses carry it; every other response leaves
     * it out.
     */
    token?: string;
    /**
     * The worker that accepted the current or most recent attempt.
     */
    worker?: string;
    /**
     * When the current lease ends; absent when the job has no lease.
     */
    lease_until?: Time;
    /**
     * A producer cancelled the job while a worker held it.
     */
    cancel_requested?: boolean;
    /**
     * The job was re-added or resubmitted while running; it runs again when the
     * attempt ends.
     */
    resubmit?: boolean;
    /**
     * Progress in percent reported by heartbeats.
     */
    progress: number;
    /**
     * The most recent attempt error.
     */
    last_error?: string;
    /**
     * Every recorded attempt error, in order.
     */
    errors?: AttemptError[];
    /**
     * The JSON result the worker passed to finish (any JSON value).
     */
    result?: unknown;
    /**
     * When the job was first added.
     */
    created_at: Time;
    /**
     * When the most recent attempt was accepted.
     */
    started_at?: Time;
    /**
     * When the job entered a terminal state.
     */
    finished_at?: Time;
    /**
     * When the job last changed.
     */
    updated_at: Time;
    /**
     * What the producer attached to the job besides its data (see
     * AddRequest.meta); absent when none.
     */
    meta?: {
        [key: string]: string;
    };
    /**
     * The job's schedule (see AddRequest.schedule), a repeat upper-cased; absent
     * for a one-off job.
     */
    schedule?: string;
    /**
     * The recurring job's missed-slot policy; absent means once.
     */
    missed?: Missed;
    /**
     * The slot of its schedule that the recurring job's current cycle stands for;
     * run_at is its next run while it is pending (a retry within the slot keeps
     * the slot).
     */
    slot?: Time;
    /**
     * The job's fixed lease (see AddRequest.retry_after); absent when none.
     */
    retry_after?: Duration;
    /**
     * How long each run of the job may last (see AddRequest.timeout); absent when
     * none.
     */
    timeout?: Duration;
    /**
     * The job's deadline (see AddRequest.expires_at); for a recurring job, its
     * current slot's. Absent when none.
     */
    expires_at?: Time;
    /**
     * The job ended because its deadline passed before it started (state
     * cancelled; last_error says when). Absent when not.
     */
    expired?: boolean;
    /**
     * The unique window of the add that inserted the job (see
     * AddRequest.unique_for), kept to show; absent when none.
     */
    unique_for?: Duration;
    /**
     * The debounce of the add that inserted the job (see AddRequest.debounce),
     * kept to show; absent when none.
     */
    debounce?: Duration;
    /**
     * The job's parent (AddRequest.parent); absent for none.
     */
    parent?: number;
    /**
     * The job has had children; list them with GET /v1/jobs?parent=ID.
     */
    has_children?: boolean;
    /**
     * A child's parent's data, as accept gives it to the child's worker (when the
     * parent is in the token's reach).
     */
    parent_data?: {
        [key: string]: unknown;
    };
    /**
     * A parent's children that ended since its last completed run, as accept gives
     * them to its worker (those in the token's reach).
     */
    children?: Child[];
    /**
     * The job's id in Bedrock's protocol: a random positive 63-bit integer the job
     * gets when the protocol first names it; absent until then.
     */
    bedrock_id?: number;
    /**
     * When the run before the current one started; absent before a second run.
     */
    prev_started_at?: Time;
    /**
     * The job was added after other jobs (after); GET /v1/jobs/{id}/deps lists
     * them.
     */
    has_deps?: boolean;
    on_dep_failure?: DepPolicy;
    /**
     * The outcomes of the jobs this one was added after, in the order named, as
     * accept gives them to its worker; one out of the token's reach shows its id
     * and state alone.
     */
    deps?: Dep[];
    /**
     * The batch the job is a member of (AddRequest.batch, POST /v1/batches);
     * absent for none.
     */
    batch?: number;
}
/**
 * One job (without its token).
 */
export interface JobResponse {
    job: Job;
}
/**
 * A page of jobs.
 */
export interface ListResponse {
    /**
     * The page's jobs, in id order (descending with order=desc), without tokens.
     */
    jobs: Job[];
    /**
     * Present when there may be more jobs: pass it as ?cursor= (with the same
     * filters) for the next page.
     */
    next_cursor?: string;
}
/**
 * One attempt's log, summed up.
 */
export interface LogAttempt {
    /**
     * The attempt.
     */
    attempt: number;
    /**
     * Records kept.
     */
    records: number;
    /**
     * What the records kept count toward the bound (64 KiB).
     */
    bytes: number;
    /**
     * Records dropped past the bound, by the server or the worker.
     */
    dropped: number;
}
/**
 * One record of a job's log: what a handler logged during an attempt (a
 * program's stderr line under rota work).
 */
export interface LogRecord {
    /**
     * The attempt that logged it; set by the server (left out of an append).
     */
    attempt?: number;
    /**
     * The record's place in its attempt's log, from 1; set by the server (left out
     * of an append).
     */
    seq?: number;
    /**
     * When it was logged; absent in an append means the server's time.
     */
    time?: Time;
    /**
     * Required. The level, by Go's log/slog names: DEBUG, INFO, WARN or ERROR,
     * optionally with an offset (INFO+2, ERROR+4), case-insensitive in an append.
     */
    level: string;
    /**
     * Required. The message: UTF-8 text without NUL bytes.
     */
    message: string;
    /**
     * The record's attributes as one JSON object (groups nested); absent when it
     * has none.
     */
    attrs?: {
        [key: string]: unknown;
    };
}
/**
 * A page of a job's log: the records of one attempt.
 */
export interface LogsResponse {
    /**
     * The attempt the page is of; 0 when the job logged nothing.
     */
    attempt: number;
    /**
     * Every attempt that logged, oldest first.
     */
    attempts: LogAttempt[];
    /**
     * The page's records, in order.
     */
    records: LogRecord[];
    /**
     * The after of the next page; absent on the last.
     */
    next?: number;
}
/**
 * A recurring job's policy for slots that passed while it could not run
 * (server down, type or group paused, a run longer than a slot); a slot counts
 * as missed when the next one falls due before the job starts. once: run once
 * for all of them, then keep to the schedule. skip: do not run late; go to the
 * next slot to come. all: run once for each, one after the other (Bedrock's
 * catch-up).
 */
export type Missed = "once" | "skip" | "all";
/** Every Missed, in the document's order. */
export declare const missedValues: readonly Missed[];
/**
 * What an add or resubmit did: inserted a new job; updated a pending job (new
 * data and run time); resubmitted a running job (it runs again when its worker
 * ends); requeued an ended job (pending again, same id); unchanged: a unique
 * add, or an add within a unique window (unique_for), found the job and
 * changed nothing (it was deduplicated).
 */
export type Outcome = "inserted" | "updated" | "resubmitted" | "requeued" | "unchanged";
/** Every Outcome, in the document's order. */
export declare const outcomeValues: readonly Outcome[];
/**
 * Optional settings for a resubmit. The body may be empty.
 */
export interface ResubmitRequest {
    /**
     * When the job should run again. Without it a pending job keeps its run_at;
     * others run now.
     */
    run_at?: Time;
    /**
     * New data for the next run; without it the job keeps its data.
     */
    data?: {
        [key: string]: unknown;
    };
}
/**
 * Puts a job back until later without using up an attempt.
 */
export interface SnoozeRequest {
    /**
     * Required. The lease token that accept returned.
     */
    token: string;
    /**
     * When to run again. Give run_at or delay, not both; with neither the job is
     * due at once.
     */
    run_at?: Time;
    /**
     * How long from now to run again; must not be negative.
     */
    delay?: Duration;
    /**
     * Gives the job this new type for its next run (Bedrock's RetryJob with a
     * name); with snooze only.
     */
    rename?: string;
}
/**
 * A job's lifecycle state. completed, failed and cancelled are terminal.
 * paused: a child waiting for its parent's run to end, or a parent waiting for
 * its children. waiting: added after other jobs (after), it waits for them to
 * end, then becomes pending.
 */
export type State = "pending" | "running" | "paused" | "completed" | "failed" | "cancelled" | "waiting";
/** Every State, in the document's order. */
export declare const stateValues: readonly State[];
/**
 * Job counts.
 */
export interface StatsResponse {
    /**
     * Job counts by type, group and state, in that order; combinations without
     * jobs are left out.
     */
    counts: Count[];
    /**
     * Total jobs in each state (every state is present).
     */
    by_state: {
        pending: number;
        running: number;
        paused: number;
        completed: number;
        failed: number;
        cancelled: number;
        waiting: number;
    };
}
/**
 * An RFC 3339 time, such as "2026-01-02T15:04:05Z" or
 * "2026-01-02T15:04:05.123+01:00". Stores hold times from 1970 to 9999; a time
 * outside that range is rejected with invalid_input.
 */
export type Time = string;
/**
 * A named token, without its secret.
 */
export interface Token {
    /**
     * The token's name.
     */
    name: string;
    /**
     * GLOB patterns of the groups whose jobs it reaches ("" is the default group);
     * absent means every group.
     */
    groups?: string[];
    /**
     * GLOB patterns of the types whose jobs it reaches; absent means every type.
     */
    types?: string[];
    /**
     * It reads but changes nothing. Absent means false.
     */
    read_only?: boolean;
    /**
     * When it was created.
     */
    created_at: Time;
}
/**
 * Carries only the lease token.
 */
export interface TokenRequest {
    /**
     * Required. The lease token that accept returned.
     */
    token: string;
}
/**
 * The named tokens.
 */
export interface TokensResponse {
    /**
     * By name.
     */
    tokens: Token[];
}
/**
 * A type's settings.
 */
export interface TypeConfig {
    /**
     * The type. In a PUT body it is optional and must equal the path's type.
     */
    type?: string;
    /**
     * How long a worker may go without a heartbeat before its job is taken back;
     * absent or 0 means the default (30s). At least 1ms when set.
     */
    lease_timeout?: Duration;
    /**
     * A counting scheme interleaving two priority bands within each group, such as
     * "2,1": of every 3 jobs a group hands out, 2 come from its high band
     * (priority > 0) and 1 from its low band (priority <= 0), each falling back to
     * the other when empty. Absent means strict priority order.
     */
    bands?: string;
    /**
     * At most this many running jobs per group of this type; absent or 0 means no
     * bound.
     */
    group_max_running?: number;
    /**
     * At most this many running jobs of the whole type, all groups together,
     * across every node of the store; absent or 0 means no bound. It holds beside
     * group_max_running and the groups' own bounds: a job starts only within all
     * of them.
     */
    max_running?: number;
    /**
     * How many of the type's jobs start per second, minute or hour ("50/s",
     * "100/m", "10/h"; N from 1 to 1000000), all groups together, across every
     * node of the store; absent means no rate. Jobs over it wait (they are not
     * failed) and start as tokens come; the rate is shared between the type's
     * groups by their weights, what an idle group leaves going to the others. A
     * job counts against it when it starts.
     */
    rate?: string;
    /**
     * How many jobs may start at once under rate (the token bucket's size); absent
     * or 0 means the default: N for a rate per second, else 1. Needs a rate.
     */
    burst?: number;
    /**
     * The type is paused: its jobs are added and wait, running ones finish, no
     * accept takes any until it is resumed. Recurring jobs whose slots pass
     * meanwhile follow their missed-slot policy. Absent means false.
     */
    paused?: boolean;
    /**
     * How long the type's completed and cancelled jobs are kept after they end,
     * before a background sweep deletes them (in batches, on one node); 1s..100y,
     * absent or 0 for the default of 7 days (168h). Children whose parent has not
     * ended are kept until it has; jobs that have not ended (recurring jobs
     * between runs, parents waiting for children) are never deleted. Failed jobs
     * follow failed_retention.
     */
    retention?: Duration;
    /**
     * How long the type's failed jobs are kept after they fail, before the
     * background sweep deletes them; 1s..100y, absent or 0 to keep them until they
     * are removed (the default: failed jobs are a dead-letter list to triage,
     * retry or remove).
     */
    failed_retention?: Duration;
    /**
     * The default run timeout of the type's jobs that have none of their own
     * (AddRequest.timeout wins over it); at least 1ms, absent or 0 for none. It
     * applies when a job starts, so a change reaches the jobs waiting; a run that
     * lasts longer is stopped and counts as a failed attempt, "timed out after …".
     */
    timeout?: Duration;
}
/**
 * Known types.
 */
export interface TypesResponse {
    /**
     * The types the store knows, by name.
     */
    types: TypeConfig[];
}
/**
 * What to change in a job; absent fields keep the job's.
 */
export interface UpdateRequest {
    /**
     * Replaces the job's data (a JSON object, at most 1 MiB).
     */
    data?: {
        [key: string]: unknown;
    };
    /**
     * Replaces the job's priority.
     */
    priority?: number;
    /**
     * Moves a pending or paused job's run time; 409 for a job in another state.
     */
    run_at?: Time;
    /**
     * Replaces the job's schedule (see AddRequest.schedule); "" makes it a one-off
     * job.
     */
    schedule?: string;
    /**
     * Replaces the recurring job's missed-slot policy.
     */
    missed?: Missed;
}
/** The API's routes by operationId. */
export declare const operations: {
    readonly accept: {
        readonly method: "POST";
        readonly path: "/v1/accept";
    };
    readonly addBatch: {
        readonly method: "POST";
        readonly path: "/v1/batches";
    };
    readonly addBatchJobs: {
        readonly method: "POST";
        readonly path: "/v1/batches/{id}/jobs";
    };
    readonly addJobs: {
        readonly method: "POST";
        readonly path: "/v1/jobs";
    };
    readonly appendJobLogs: {
        readonly method: "POST";
        readonly path: "/v1/jobs/{id}/logs";
    };
    readonly cancelJob: {
        readonly method: "POST";
        readonly path: "/v1/jobs/{id}/cancel";
    };
    readonly closeBatch: {
        readonly method: "POST";
        readonly path: "/v1/batches/{id}/close";
    };
    readonly createToken: {
        readonly method: "POST";
        readonly path: "/v1/tokens";
    };
    readonly events: {
        readonly method: "GET";
        readonly path: "/v1/events";
    };
    readonly failJob: {
        readonly method: "POST";
        readonly path: "/v1/jobs/{id}/fail";
    };
    readonly finishBatch: {
        readonly method: "POST";
        readonly path: "/v1/finish";
    };
    readonly finishJob: {
        readonly method: "POST";
        readonly path: "/v1/jobs/{id}/finish";
    };
    readonly getBatch: {
        readonly method: "GET";
        readonly path: "/v1/batches/{id}";
    };
    readonly getJob: {
        readonly method: "GET";
        readonly path: "/v1/jobs/{id}";
    };
    readonly getJobDeps: {
        readonly method: "GET";
        readonly path: "/v1/jobs/{id}/deps";
    };
    readonly getJobHistory: {
        readonly method: "GET";
        readonly path: "/v1/jobs/{id}/history";
    };
    readonly getJobLogs: {
        readonly method: "GET";
        readonly path: "/v1/jobs/{id}/logs";
    };
    readonly healthz: {
        readonly method: "GET";
        readonly path: "/healthz";
    };
    readonly heartbeatBatch: {
        readonly method: "POST";
        readonly path: "/v1/heartbeat";
    };
    readonly heartbeatJob: {
        readonly method: "POST";
        readonly path: "/v1/jobs/{id}/heartbeat";
    };
    readonly listBatches: {
        readonly method: "GET";
        readonly path: "/v1/batches";
    };
    readonly listGroups: {
        readonly method: "GET";
        readonly path: "/v1/groups";
    };
    readonly listJobs: {
        readonly method: "GET";
        readonly path: "/v1/jobs";
    };
    readonly listTokens: {
        readonly method: "GET";
        readonly path: "/v1/tokens";
    };
    readonly listTypes: {
        readonly method: "GET";
        readonly path: "/v1/types";
    };
    readonly metrics: {
        readonly method: "GET";
        readonly path: "/metrics";
    };
    readonly openapi: {
        readonly method: "GET";
        readonly path: "/v1/openapi.json";
    };
    readonly releaseJob: {
        readonly method: "POST";
        readonly path: "/v1/jobs/{id}/release";
    };
    readonly removeJob: {
        readonly method: "DELETE";
        readonly path: "/v1/jobs/{id}";
    };
    readonly resubmitJob: {
        readonly method: "POST";
        readonly path: "/v1/jobs/{id}/resubmit";
    };
    readonly revokeToken: {
        readonly method: "DELETE";
        readonly path: "/v1/tokens/{name}";
    };
    readonly setGroup: {
        readonly method: "PUT";
        readonly path: "/v1/groups";
    };
    readonly setType: {
        readonly method: "PUT";
        readonly path: "/v1/types/{type}";
    };
    readonly snoozeJob: {
        readonly method: "POST";
        readonly path: "/v1/jobs/{id}/snooze";
    };
    readonly stats: {
        readonly method: "GET";
        readonly path: "/v1/stats";
    };
    readonly updateJob: {
        readonly method: "PATCH";
        readonly path: "/v1/jobs/{id}";
    };
};
export type OperationId = keyof typeof operations;
/** The query parameters of GET /v1/events (events). */
export interface EventsQuery {
    /**
     * Follow this one job.
     */
    job?: number;
    /**
     * Follow jobs whose type matches one of these GLOB patterns (repeatable; a
     * value is one pattern, so {a,b} alternatives work; at most 32 patterns, else
     * 400); all types by default.
     */
    type?: string[];
    /**
     * false leaves out jobs starting to run or reporting progress (state running,
     * not removed): a remote worker acts only on the other changes, and starts are
     * half of a busy stream. Default true. Not with job (400).
     */
    running?: boolean;
    /**
     * false leaves out jobs completing (state completed, not removed): a remote
     * worker does not act on them (it completed them itself), and they are the
     * other half of a busy stream. Default true. Not with job (400).
     */
    completed?: boolean;
}
/** The query parameters of GET /v1/jobs/{id} (getJob). */
export interface GetJobQuery {
    /**
     * How long to wait for the job to be in one of the states, a Go duration up to
     * the server's maximum (60s by default); absent answers at once.
     */
    wait?: string;
    /**
     * The states to wait for (repeatable, or comma-separated); needs wait.
     * Terminal states by default.
     */
    state?: State[];
}
/** The query parameters of GET /v1/jobs/{id}/deps (getJobDeps). */
export interface GetJobDepsQuery {
    /**
     * At most this many dependants (1..1000; 100 by default).
     */
    limit?: number;
}
/** The query parameters of GET /v1/jobs/{id}/logs (getJobLogs). */
export interface GetJobLogsQuery {
    /**
     * The attempt whose records to read; absent means the latest that logged.
     */
    attempt?: number;
    /**
     * The seq after which the page starts (the next of the previous page); absent
     * starts at the first record.
     */
    after?: number;
    /**
     * At most this many records (1..1000, the default).
     */
    limit?: number;
}
/** The query parameters of GET /v1/batches (listBatches). */
export interface ListBatchesQuery {
    /**
     * Batches with a lower id than this (the next_cursor of the page before).
     */
    before?: number;
    /**
     * At most this many (1 to 1000; 100 by default).
     */
    limit?: number;
}
/** The query parameters of GET /v1/jobs (listJobs). */
export interface ListJobsQuery {
    /**
     * Exact type names (repeatable, or comma-separated: a type whose name has a
     * comma cannot be listed by it).
     */
    type?: string[];
    /**
     * States (repeatable, or comma-separated).
     */
    state?: State[];
    /**
     * Groups (repeatable). Each value is one group name, commas included; an empty
     * value (group=) selects jobs without a group.
     */
    group?: string[];
    /**
     * Only the children of this job.
     */
    parent?: number;
    /**
     * true lists only recurring jobs (with a schedule), in any state.
     */
    recurring?: boolean;
    /**
     * Only jobs that changed at or after this time (RFC 3339).
     */
    updated_since?: string;
    /**
     * Page size; 100 by default.
     */
    limit?: number;
    /**
     * The next_cursor of the previous page.
     */
    cursor?: string;
    /**
     * asc (by default) or desc: ascending or descending id.
     */
    order?: "asc" | "desc";
    /**
     * Find the job with this key; needs exactly one type, and finds it in the
     * group given by group (at most one; the default group "" when none): a key is
     * unique within a type and a group.
     */
    key?: string;
    /**
     * Job ids (repeatable, or comma-separated; at most 1000).
     */
    id?: number[];
}
