export * from "./openapi.js";
export * from "./errors.js";
export { Client } from "./client.js";
export type { ClientOptions, AddedJob, AddInput, ListInput, TimeInput, SubscribeOptions, Subscription, BatchInput, BatchWithJobs } from "./client.js";
export { Worker, LeaseLostError, ShutdownError, PermanentError, SnoozeError, CancelJobError, permanent, snooze, cancelJob, leaseTag, } from "./worker.js";
export type { Handler, JobContext, JobLogger, JobLogLevel, WorkerOptions, RunOptions, FinishReport, Logger } from "./worker.js";
