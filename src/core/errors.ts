// One error type for the whole program. Engines throw FirkinError with a code from the
// closed set below; `http/errors.ts` is the only place that turns a code into a status.

export const ERROR_CODES = [
  'bad_request',
  'unauthorized',
  'forbidden',
  'not_found',
  'method_not_allowed',
  'conflict',
  'already_exists',
  'precondition_failed',
  'too_large',
  'unsupported_media_type',
  'unavailable',
  'bad_gateway',
  'timeout',
  'error', // the spec's code for an internal error (500)
  // vector service codes named by its spec
  'no_bm25_index',
  'same_shard_count',
  'not_clustered',
  'not_member',
  'not_leader',
  // cluster codes
  'already_member',
  'no_quorum',
  /** A shard map changed under a request (a reshard switched it): retry with the new one. */
  'stale_epoch',
  /** One reshard per collection at a time. */
  'reshard_in_progress',
  // gateway codes named by its spec
  'missing_api_key',
  'invalid_api_key',
  'invalid_master_key',
  'collection_not_found',
  'document_not_found',
  'collection_already_exists',
  'quota_exceeded',
  'rate_limit_exceeded',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export class FirkinError extends Error {
  /** Extra fields merged into the error body (e.g. `leader` for not_leader). */
  readonly details: Record<string, unknown> | undefined;
  /** Extra response headers (e.g. Retry-After, Allow). */
  readonly headers: Record<string, string> | undefined;

  constructor(
    readonly code: ErrorCode,
    message: string,
    options?: ErrorOptions & { details?: Record<string, unknown>; headers?: Record<string, string> },
  ) {
    super(message, options);
    this.name = 'FirkinError';
    this.details = options?.details;
    this.headers = options?.headers;
  }
}

export function isFirkinError(value: unknown): value is FirkinError {
  return value instanceof FirkinError;
}

/**
 * A write the cluster committed (its leader applied it) that this node had not applied by the
 * deadline: a 504 whose `committed: true` tells the client not to repeat it.
 */
export function committedNotApplied(node: string, index: number): FirkinError {
  return new FirkinError('timeout', `the write committed at index ${index}, but ${node} has not applied it yet (it is behind the leader): do not repeat it`, { details: { committed: true, index } });
}

export function wasCommitted(err: unknown): boolean {
  return isFirkinError(err) && err.details?.committed === true;
}
