export * from "./openapi.js";
export * from "./errors.js";
export { Client } from "./client.js";
export { Worker, LeaseLostError, ShutdownError, PermanentError, SnoozeError, CancelJobError, permanent, snooze, cancelJob, leaseTag, } from "./worker.js";
