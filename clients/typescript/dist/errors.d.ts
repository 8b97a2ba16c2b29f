import type { ErrorCode } from "./openapi.js";
/**
 * RotaError is every error the server answers with: `code` is the API's
 * stable error code (match on it, or on the subclass), `status` the HTTP
 * status, and the message the server's, for people.
 */
export declare class RotaError extends Error {
    readonly code: ErrorCode | string;
    readonly status: number;
    constructor(message: string, code: ErrorCode | string, status: number, options?: {
        cause?: unknown;
    });
}
/** invalid_input (400): the request is malformed or asks for something impossible. */
export declare class InvalidInputError extends RotaError {
}
/** not_found (404): no such job (or endpoint). */
export declare class NotFoundError extends RotaError {
}
/** worker_conflict (409): the lease token is stale or the job is not running: the lease was lost. */
export declare class WorkerConflictError extends RotaError {
}
/** canceled (409): the job was cancelled or removed while the caller held it. */
export declare class CanceledError extends RotaError {
}
/** finished (409): the job has already ended. */
export declare class FinishedError extends RotaError {
}
/** too_large (413): the body is over the server's limit. */
export declare class TooLargeError extends RotaError {
}
/** unauthorized (401): the server needs a token. */
export declare class UnauthorizedError extends RotaError {
}
/** forbidden (403): the token may not do this (wrong, read-only, or scoped to other groups or types). */
export declare class ForbiddenError extends RotaError {
}
/** method_not_allowed (405). */
export declare class MethodNotAllowedError extends RotaError {
}
/** unsupported_media_type (415): a request body not sent as Content-Type: application/json. */
export declare class UnsupportedMediaTypeError extends RotaError {
}
/** unavailable (503): the server's store is closed or unreachable; it may pass. */
export declare class UnavailableError extends RotaError {
    /** The server's Retry-After, in milliseconds (0 when it sent none). */
    retryAfterMs: number;
}
/**
 * too_many_requests (429): the token has as many requests in flight as one
 * token may; it passes as they end. An UnavailableError, so that what
 * tries those again (reads, event streams, a worker's calls) tries this too.
 */
export declare class TooManyRequestsError extends UnavailableError {
}
/** internal (500): anything else; the server's log has the details. */
export declare class InternalError extends RotaError {
}
/**
 * ConnectionError: no answer from the server (refused, reset, timed out,
 * a TLS failure). Its cause is Node's error. It may pass.
 */
export declare class ConnectionError extends RotaError {
    constructor(message: string, options?: {
        cause?: unknown;
    });
}
/** errorOf makes the error of an API error body (or batch item's error). */
export declare function errorOf(code: string, message: string, status?: number): RotaError;
