import {
  type ApiError,
  type ApiErrorDetails,
  ForbiddenError,
  InvalidCredentialsError,
  NotFoundError,
  RateLimitedError,
  RedirectError,
  RequestRejectedError,
  ServiceError,
  TooLargeError,
  UnparsableResponseError,
} from '../errors.js';
import { displayText } from '../output/display.js';
import type { CreateAnswer, CreateResponse, CreateResult, PayoutRecord } from './types.js';

/** An HTTP answer as the client received it. */
export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The body as text, for messages and traces; the secret redacted in any form. */
  body: string;
  /** The body decoded as JSON, the secret redacted from every string; undefined if not JSON. */
  json: { value: unknown } | undefined;
  /** Milliseconds since the epoch when the answer arrived, for HTTP-date Retry-After. */
  receivedAt: number;
}

/** The envelope every answer of the service uses. */
export interface Envelope {
  success: boolean;
  messages: string[];
  data: unknown;
}

/** Which endpoint an answer belongs to: decides how some failures read. */
export type Endpoint = { kind: 'create' } | { kind: 'status'; referenceId: string };

/** The first 200 characters of a body, for error messages. */
export function snippet(body: string): string {
  const flat = body.replace(/\s+/g, ' ').trim();
  return flat.length > 200 ? `${flat.slice(0, 200)}…` : flat;
}

/** Reads a header that may be repeated. */
function header(res: RawResponse, name: string): string | undefined {
  const v = res.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Parses Retry-After (seconds or HTTP date) into milliseconds. */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (!value) return undefined;
  const t = value.trim();
  if (/^\d+$/.test(t)) return Number.parseInt(t, 10) * 1000;
  const date = Date.parse(t);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Normalises `message`: an array of strings, a single string, or absent. */
function messagesOf(value: unknown): string[] {
  if (typeof value === 'string') return value ? [value] : [];
  if (Array.isArray(value)) return value.filter((m): m is string => typeof m === 'string');
  return [];
}

/** Reads the envelope from a parsed body, or undefined when the body is not one. */
export function readEnvelope(parsed: unknown): Envelope | undefined {
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
  const o = parsed as Record<string, unknown>;
  if (typeof o.success !== 'boolean') return undefined;
  return { success: o.success, messages: messagesOf(o.message), data: o.data };
}

/** The typed error that an answer's HTTP status alone names (3xx, 403, 429, 413, 5xx). */
function errorForStatus(
  res: RawResponse,
  text: string,
  details: ApiErrorDetails,
): ApiError | ForbiddenError | undefined {
  const s = res.status;
  if (s >= 300 && s < 400) {
    const location = displayText(header(res, 'location') ?? '(no Location header)');
    return new RedirectError(
      `the service answered with a redirect (HTTP ${s}) to ${location}; redirects are not followed so that credentials never reach another host: set the base URL to the final address`,
      details,
    );
  }
  if (s === 403) {
    return new ForbiddenError(
      `the service refused this request (HTTP 403${text}): check that this machine's IP address is allowed in the API key settings`,
    );
  }
  if (s === 429)
    return new RateLimitedError(`rate limited by the service (HTTP 429${text})`, details);
  // Only the status splits a request: a message such as "too many" proves nothing about it.
  if (s === 413) {
    return new TooLargeError(
      `the service refused the request as too large (HTTP 413${text})`,
      details,
    );
  }
  if (s >= 500) return new ServiceError(`the service failed (HTTP ${s}${text})`, details, true);
  return undefined;
}

/** The spec's "not found" text, the only words that may prove a payout missing. */
const NOT_FOUND_TEXT = 'Payout not found';

/**
 * Whether a status answer proves the payout missing: only the spec's error envelope (JSON,
 * `success` false, `message` exactly one text, "Payout not found", `data` empty) under a status
 * below 500. A proxy's or framework's error page that reads the same is no proof: the payout
 * may exist, and taking it as missing would pay it twice.
 */
function provesNotFound(res: RawResponse, env: Envelope | undefined): boolean {
  if (!env || env.success || res.status >= 500) return false;
  const message = (res.json?.value as { message?: unknown } | undefined)?.message;
  return (
    Array.isArray(message) &&
    message.length === 1 &&
    message[0] === NOT_FOUND_TEXT &&
    isEmptyData(env.data)
  );
}

/** `data` as the spec's error envelope has it: an empty array (or nothing at all). */
function isEmptyData(data: unknown): boolean {
  if (data === undefined || data === null) return true;
  if (Array.isArray(data)) return data.length === 0;
  return typeof data === 'object' && Object.keys(data).length === 0;
}

/** Builds the typed error for an answer that is not a success. */
function errorFor(
  res: RawResponse,
  endpoint: Endpoint,
  env: Envelope | undefined,
): ApiError | InvalidCredentialsError | ForbiddenError {
  const details: ApiErrorDetails = {
    status: res.status,
    serviceMessages: env?.messages ?? [],
    retryAfterMs: parseRetryAfter(header(res, 'retry-after'), res.receivedAt),
  };
  const said = details.serviceMessages?.join('; ') || (env ? '' : snippet(res.body));
  // The service's words go into messages for people: shown escaped, kept exact in serviceMessages.
  const text = said ? `: ${displayText(said)}` : '';
  // The spec's credentials text decides only for reads; a create answer is judged by its status.
  const credentialsText = endpoint.kind === 'status' && /invalid api credentials/i.test(said);
  if (credentialsText || res.status === 401) {
    return new InvalidCredentialsError(
      `the service rejected the credentials (HTTP ${res.status}${text}): check them with \`payouts config check\``,
      res.status,
    );
  }
  if (endpoint.kind === 'status' && provesNotFound(res, env)) {
    return new NotFoundError(endpoint.referenceId, details);
  }
  const byStatus = errorForStatus(res, text, details);
  if (byStatus) return byStatus;
  if (!env) {
    return new UnparsableResponseError(
      `unexpected answer from the service (HTTP ${res.status}): ${snippet(res.body) || '(empty body)'}`,
      details,
      endpoint.kind === 'create',
    );
  }
  return new RequestRejectedError(
    `the service rejected the request (HTTP ${res.status}${text})`,
    details,
  );
}

/** Parses an answer into its envelope, or throws the typed error it stands for. */
export function parseAnswer(res: RawResponse, endpoint: Endpoint): Envelope {
  const env = readEnvelope(res.json?.value);
  if (env?.success) return env;
  if (!env && res.status >= 200 && res.status < 300) {
    throw new UnparsableResponseError(
      `the service's answer is not the expected envelope (HTTP ${res.status}): ${snippet(res.body) || '(empty body)'}`,
      { status: res.status },
      endpoint.kind === 'create',
    );
  }
  throw errorFor(res, endpoint, env);
}

/** Reads an optional string field. */
function str(o: Record<string, unknown>, key: string): string | undefined {
  const v = o[key];
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return String(v);
  return undefined;
}

/** Reads an optional number field; numeric strings are accepted because services differ. */
function num(o: Record<string, unknown>, key: string): number | undefined {
  const v = o[key];
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'string' && /^-?\d+(\.\d+)?$/.test(v.trim())) return Number(v);
  return undefined;
}

/** Reads one create result, or undefined when it lacks a reference_id or a status. */
function readResult(item: unknown): CreateResult | undefined {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) return undefined;
  const r = item as Record<string, unknown>;
  const reference_id = str(r, 'reference_id');
  const status = str(r, 'status');
  if (!reference_id || !status) return undefined;
  const message = str(r, 'message') ?? str(r, 'reason') ?? str(r, 'error');
  return {
    reference_id,
    status: status.toLowerCase(),
    transaction_id: str(r, 'transaction_id'),
    amount: num(r, 'amount'),
    currency: str(r, 'currency'),
    charges: num(r, 'charges'),
    ...(message ? { message } : {}),
  };
}

/**
 * The create data's counts and readable results, or undefined when it has no results list.
 * A result that cannot be read is left out: its payout then counts as not reported.
 */
function readCreateData(env: Envelope | undefined): CreateResponse | undefined {
  const d = env?.data;
  if (typeof d !== 'object' || d === null || Array.isArray(d)) return undefined;
  const data = d as Record<string, unknown>;
  if (!Array.isArray(data.results)) return undefined;
  const results: CreateResult[] = [];
  for (const item of data.results) {
    const r = readResult(item);
    if (r) results.push(r);
  }
  return {
    success_count: num(data, 'success_count') ?? 0,
    failed_count: num(data, 'failed_count') ?? 0,
    batch_reference: str(data, 'batch_reference'),
    results,
    messages: env?.messages ?? [],
  };
}

/**
 * Reads a create answer without deciding what it proves (src/core/send/verdict.ts does):
 * its per-payout results under any status and any `success`, and the typed error that
 * describes it when it is not a plain success.
 */
export function readCreateAnswer(res: RawResponse): CreateAnswer {
  const env = readEnvelope(res.json?.value);
  const response = readCreateData(env);
  const answer: CreateAnswer = {
    status: res.status,
    ...(response ? { response } : {}),
    retryAfterMs: parseRetryAfter(header(res, 'retry-after'), res.receivedAt),
  };
  const plain = env?.success === true && res.status >= 200 && res.status < 300;
  if (plain && response) return answer;
  if (plain || (!env && res.status >= 200 && res.status < 300)) {
    answer.error = new UnparsableResponseError(
      `the create answer has no readable results list (HTTP ${res.status}): ${snippet(res.body) || '(empty body)'}`,
      { status: res.status },
      true,
    );
    return answer;
  }
  answer.error = errorFor(res, { kind: 'create' }, env);
  return answer;
}

/** Reads the status endpoint's payout record. */
export function readPayoutRecord(
  env: Envelope,
  res: RawResponse,
  referenceId: string,
): PayoutRecord {
  const d = env.data;
  if (typeof d !== 'object' || d === null || Array.isArray(d)) {
    throw new UnparsableResponseError(
      `the status answer for ${referenceId} has no payout record (HTTP ${res.status}): ${snippet(res.body)}`,
      { status: res.status },
    );
  }
  const r = d as Record<string, unknown>;
  const status = str(r, 'status');
  if (!status) {
    throw new UnparsableResponseError(
      `the status answer for ${referenceId} has no status (HTTP ${res.status}): ${snippet(res.body)}`,
      { status: res.status },
    );
  }
  return {
    ...r,
    reference_id: str(r, 'reference_id') ?? referenceId,
    status: status.toLowerCase(),
  };
}
