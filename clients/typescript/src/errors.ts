import type { ErrorCode } from "./openapi.js";

/**
 * RotaError is every error the server answers with: `code` is the API's
 * stable error code (match on it, or on the subclass), `status` the HTTP
 * status, and the message the server's, for people.
 */
export class RotaError extends Error {
  readonly code: ErrorCode | string;
  readonly status: number;
  constructor(message: string, code: ErrorCode | string, status: number, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
    this.status = status;
  }
}

/** invalid_input (400): the request is malformed or asks for something impossible. */
export class InvalidInputError extends RotaError {}
/** not_found (404): no such job (or endpoint). */
export class NotFoundError extends RotaError {}
/** worker_conflict (409): the lease token is stale or the job is not running: the lease was lost. */
export class WorkerConflictError extends RotaError {}
/** canceled (409): the job was cancelled or removed while the caller held it. */
export class CanceledError extends RotaError {}
/** finished (409): the job has already ended. */
export class FinishedError extends RotaError {}
/** too_large (413): the body is over the server's limit. */
export class TooLargeError extends RotaError {}
/** unauthorized (401): the server needs a token. */
export class UnauthorizedError extends RotaError {}
/** forbidden (403): the token may not do this (wrong, read-only, or scoped to other groups or types). */
export class ForbiddenError extends RotaError {}
/** method_not_allowed (405). */
export class MethodNotAllowedError extends RotaError {}
/** unsupported_media_type (415): a request body not sent as Content-Type: application/json. */
export class UnsupportedMediaTypeError extends RotaError {}
/** unavailable (503): the server's store is closed or unreachable; it may pass. */
export class UnavailableError extends RotaError {
  /** The server's Retry-After, in milliseconds (0 when it sent none). */
  retryAfterMs = 0;
}
/**
 * too_many_requests (429): the token has as many requests in flight as one
 * token may; it passes as they end. An UnavailableError, so that what
 * tries those again (reads, event streams, a worker's calls) tries this too.
 */
export class TooManyRequestsError extends UnavailableError {}
/** internal (500): anything else; the server's log has the details. */
export class InternalError extends RotaError {}

/**
 * ConnectionError: no answer from the server (refused, reset, timed out,
 * a TLS failure). Its cause is Node's error. It may pass.
 */
export class ConnectionError extends RotaError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, "connection", 0, options);
  }
}

// Every code of the API has its class: a code added to the OpenAPI
// document without one here does not compile (src/openapi.ts is generated).
const classes: { [code in ErrorCode]: new (message: string, code: string, status: number) => RotaError } = {
  invalid_input: InvalidInputError,
  not_found: NotFoundError,
  worker_conflict: WorkerConflictError,
  canceled: CanceledError,
  finished: FinishedError,
  too_large: TooLargeError,
  unauthorized: UnauthorizedError,
  forbidden: ForbiddenError,
  method_not_allowed: MethodNotAllowedError,
  unsupported_media_type: UnsupportedMediaTypeError,
  too_many_requests: TooManyRequestsError,
  unavailable: UnavailableError,
  internal: InternalError,
};

/** errorOf makes the error of an API error body (or batch item's error). */
export function errorOf(code: string, message: string, status = 0): RotaError {
  const C = (classes as Record<string, (typeof classes)[ErrorCode] | undefined>)[code];
  return C ? new C(message, code, status) : new RotaError(`${code}: ${message}`, code, status);
}
