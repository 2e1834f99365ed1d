/** Typed errors of the CLI. The entry point maps them to exit codes in exit-codes.ts. */

import { displayText } from './output/display.js';

/** One problem found in an input file, located by file, line or item, and field. */
export interface Problem {
  /** File name as the user gave it, or "-" for standard input. */
  file: string;
  /** "line 12" for CSV, "item 3" for JSON, or undefined for a file-level problem. */
  location?: string;
  field?: string;
  value?: string;
  /** What is wrong and how to fix it. */
  message: string;
  /** A header's missing columns: the --map its header names suggest (send's one command). */
  map?: Partial<Record<string, string>>;
}

/**
 * Formats a problem as `file line N: field "value": message`, for people: the file, field,
 * value and message show control characters escaped (the --json problem keeps its values).
 */
export function formatProblem(p: Problem): string {
  let head = displayText(p.file);
  if (p.location) head += ` ${p.location}`;
  let subject = '';
  if (p.field !== undefined) {
    const field = displayText(p.field);
    subject = p.value !== undefined ? `${field} ${quoteValue(p.value)}: ` : `${field}: `;
  }
  return `${head}: ${subject}${displayText(p.message)}`;
}

/**
 * A value in double quotes, its quotes and backslashes escaped as JSON escapes them and every
 * character a terminal would act on or not show escaped (see displayText).
 */
export function quoteValue(value: string): string {
  return `"${displayText(value.replace(/["\\]/g, '\\$&'))}"`;
}

/**
 * The code of a Node system or undici error ('ENOENT', 'ECONNREFUSED', …), looking through
 * `cause` up to 4 levels, since fetch-style errors wrap the one that carries it.
 */
export function errorCode(err: unknown): string | undefined {
  let e: unknown = err;
  for (let i = 0; i < 4 && e && typeof e === 'object'; i++) {
    const code = (e as { code?: unknown }).code;
    // undici's generic 'UND_ERR' says nothing the wrapped error does not say better.
    if (typeof code === 'string' && code !== 'UND_ERR') return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/** The message of an error, or the text of anything else that was thrown. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Base class of every error the CLI expects and explains. */
export class PayoutsError extends Error {
  override name = 'PayoutsError';
}

/** A bug: the code broke one of its own rules. Exit 1, shown as "internal error: …". */
export class InternalError extends PayoutsError {
  override name = 'InternalError';
}

/** Wrong usage or invalid input: nothing was sent. */
export class UsageError extends PayoutsError {
  override name = 'UsageError';
}

/**
 * Another send to the same service holds its lock, or sends asked for it first: nothing was
 * sent. `holder` names who holds it (or, while it is free, who is next) and what it is doing,
 * so a person knows whom to ask; `ahead`, how many sends wait for it before this one.
 */
export class BusyError extends PayoutsError {
  override name = 'BusyError';
  constructor(
    message: string,
    /** Who holds the lock, in a few words for a live line: "ana@laptop-2, sending since …". */
    readonly holder: string,
    /** Sends waiting for the lock before this one (send --wait serves them in order). */
    readonly ahead = 0,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** Why a prepared run may not be sent (or decided on) now; each has an exit code of its own. */
export type ApprovalBlock = 'awaiting_approval' | 'rejected' | 'expired';

/**
 * The approval rule stops a send (or a decision): the run awaits approval, was rejected, or
 * expired. Nothing was sent or recorded; `approval` says which run and why, for scripts.
 */
export class ApprovalStateError extends PayoutsError {
  override name = 'ApprovalStateError';
  constructor(
    message: string,
    readonly approval: {
      state: ApprovalBlock;
      /** The prepared run concerned, when there is one. */
      prepared_run_id: string | null;
      /** A rejection's reason. */
      reason: string | null;
      /** When it expired (or expires), ISO 8601. */
      expires_at: string | null;
    },
  ) {
    super(message);
  }
}

/** Invalid input, with every problem found, so the user can fix them all at once. */
export class InputError extends UsageError {
  override name = 'InputError';
  constructor(
    readonly problems: Problem[],
    readonly totalProblems: number = problems.length,
  ) {
    super(
      `${totalProblems} problem${totalProblems === 1 ? '' : 's'} in the input; nothing was sent`,
    );
  }
}

/** Credentials missing, or rejected by the service. */
export class CredentialsError extends PayoutsError {
  override name = 'CredentialsError';
}

/** Fields common to errors that come from an answer of the service. */
export interface ApiErrorDetails {
  status?: number;
  /** The service's own message texts, when it sent any. */
  serviceMessages?: string[];
  /** How long the service asked us to wait before retrying, in milliseconds. */
  retryAfterMs?: number;
}

/** The service answered, but not with success. */
export class ApiError extends PayoutsError {
  override name = 'ApiError';
  readonly status?: number;
  readonly serviceMessages: string[];
  readonly retryAfterMs?: number;
  /** Whether a create request that got this answer may still have been applied. */
  readonly mayHaveBeenApplied: boolean;
  constructor(message: string, details: ApiErrorDetails = {}, mayHaveBeenApplied = false) {
    super(message);
    this.status = details.status;
    this.serviceMessages = details.serviceMessages ?? [];
    this.retryAfterMs = details.retryAfterMs;
    this.mayHaveBeenApplied = mayHaveBeenApplied;
  }
}

/** The service rejected the credentials ("Invalid API credentials", 401). */
export class InvalidCredentialsError extends CredentialsError {
  override name = 'InvalidCredentialsError';
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

/** The service refused this machine (403), most often because of the key's allowed IPs. */
export class ForbiddenError extends CredentialsError {
  override name = 'ForbiddenError';
}

/** The status endpoint answered "Payout not found". */
export class NotFoundError extends ApiError {
  override name = 'NotFoundError';
  constructor(
    readonly referenceId: string,
    details: ApiErrorDetails = {},
  ) {
    super(`Payout not found: ${referenceId}`, details);
  }
}

/** 429: the request was not processed; retry after a while. */
export class RateLimitedError extends ApiError {
  override name = 'RateLimitedError';
}

/** 413 or the service's size error: the request was refused whole, nothing of it applied. */
export class TooLargeError extends ApiError {
  override name = 'TooLargeError';
}

/** 5xx: the service failed; a create request may or may not have been applied. */
export class ServiceError extends ApiError {
  override name = 'ServiceError';
}

/** A 4xx that rejected the whole request: nothing of it was applied. */
export class RequestRejectedError extends ApiError {
  override name = 'RequestRejectedError';
}

/** The answer could not be understood (not JSON, or not the envelope). */
export class UnparsableResponseError extends ApiError {
  override name = 'UnparsableResponseError';
}

/** A redirect: never followed, so credentials never reach another host. */
export class RedirectError extends ApiError {
  override name = 'RedirectError';
}

/** No answer from the service. */
export class NetworkError extends PayoutsError {
  override name = 'NetworkError';
  constructor(
    message: string,
    /** False only when the request provably never reached the service (e.g. connection refused). */
    readonly mayHaveBeenApplied: boolean,
    readonly code?: string,
  ) {
    super(message);
  }
}

/** A shared history (PostgreSQL) that cannot be reached or refused a statement: run again. */
export class StateStoreError extends PayoutsError {
  override name = 'StateStoreError';
}

/** Create requests whose outcome could not be established, even after reading them back. */
export class OutcomeUnknownError extends PayoutsError {
  override name = 'OutcomeUnknownError';
  constructor(
    message: string,
    readonly references: string[],
  ) {
    super(message);
  }
}

/** The run was interrupted by SIGINT or SIGTERM. */
export class InterruptedError extends PayoutsError {
  override name = 'InterruptedError';
}
