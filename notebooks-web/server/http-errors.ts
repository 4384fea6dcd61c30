/**
 * The dashboard API's error catalogue: every error that reaches HTTP is an {@link ApiError}
 * with a stable code, and this file alone maps codes to statuses.
 */

/** Stable error codes of the API. */
export type ApiErrorCode = 'bad_request' | 'not_found' | 'method_not_allowed' | 'internal' | 'unavailable';

/** HTTP status of each code. */
export const STATUS_OF_CODE: { readonly [C in ApiErrorCode]: number } = {
  bad_request: 400,
  not_found: 404,
  method_not_allowed: 405,
  internal: 500,
  unavailable: 503,
};

/** An error meant for the client: its message is shown as is, so it names no server paths. */
export class ApiError extends Error {
  constructor(
    readonly code: ApiErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  /** The HTTP status of {@link code}. */
  get status(): number {
    return STATUS_OF_CODE[this.code];
  }
}

/** 400: a malformed path segment or query parameter. */
export function badRequest(message: string): ApiError {
  return new ApiError('bad_request', message);
}

/** 404: an unknown results file, experiment, run, request or route. */
export function notFound(message: string): ApiError {
  return new ApiError('not_found', message);
}

/** 503: a results file exists but cannot be opened now (e.g. a simulation is writing it). */
export function unavailable(message: string): ApiError {
  return new ApiError('unavailable', message);
}
