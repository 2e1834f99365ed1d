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
import type { CreateResponse, CreateResult, PayoutRecord } from './types.js';

/** An HTTP answer as the client received it. */
export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
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
  const text = said ? `: ${said}` : '';
  if (/invalid api credentials/i.test(said) || res.status === 401) {
    return new InvalidCredentialsError(
      `the service rejected the credentials (HTTP ${res.status}${text}): check them with \`payouts config check\``,
      res.status,
    );
  }
  if (/payout not found/i.test(said) && endpoint.kind === 'status') {
    return new NotFoundError(endpoint.referenceId, details);
  }
  if (res.status >= 300 && res.status < 400) {
    const location = header(res, 'location') ?? '(no Location header)';
    return new RedirectError(
      `the service answered with a redirect (HTTP ${res.status}) to ${location}; redirects are not followed so that credentials never reach another host: set the base URL to the final address`,
      details,
    );
  }
  if (res.status === 403) {
    return new ForbiddenError(
      `the service refused this request (HTTP 403${text}): check that this machine's IP address is allowed in the API key settings`,
    );
  }
  if (res.status === 429) {
    return new RateLimitedError(`rate limited by the service (HTTP 429${text})`, details);
  }
  if (
    res.status === 413 ||
    /too (large|many)|maximum number|payload.*large|limit.*payouts/i.test(said)
  ) {
    return new TooLargeError(
      `the service refused the request as too large (HTTP ${res.status}${text})`,
      details,
    );
  }
  if (res.status >= 500) {
    return new ServiceError(`the service failed (HTTP ${res.status}${text})`, details, true);
  }
  if (!env) {
    return new UnparsableResponseError(
      `unexpected answer from the service (HTTP ${res.status}): ${snippet(res.body) || '(empty body)'}`,
      details,
      endpoint.kind === 'create',
    );
  }
  if (res.status === 404 && endpoint.kind === 'status' && !said) {
    return new NotFoundError(endpoint.referenceId, details);
  }
  return new RequestRejectedError(
    `the service rejected the request (HTTP ${res.status}${text})`,
    details,
  );
}

/** Parses an answer into its envelope, or throws the typed error it stands for. */
export function parseAnswer(res: RawResponse, endpoint: Endpoint): Envelope {
  let parsed: unknown;
  let isJson = true;
  try {
    parsed = res.body === '' ? undefined : JSON.parse(res.body);
  } catch {
    isJson = false;
  }
  const env = isJson ? readEnvelope(parsed) : undefined;
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

/** Reads the create response's data, throwing when it lacks what the CLI relies on. */
export function readCreateResponse(env: Envelope, res: RawResponse): CreateResponse {
  const bad = (why: string) =>
    new UnparsableResponseError(
      `the create answer ${why} (HTTP ${res.status}): ${snippet(res.body)}`,
      { status: res.status },
      true,
    );
  const d = env.data;
  if (typeof d !== 'object' || d === null || Array.isArray(d)) throw bad('has no data object');
  const data = d as Record<string, unknown>;
  if (!Array.isArray(data.results)) throw bad('has no results list');
  const results: CreateResult[] = [];
  for (const item of data.results) {
    if (typeof item !== 'object' || item === null)
      throw bad('holds a result that is not an object');
    const r = item as Record<string, unknown>;
    const reference_id = str(r, 'reference_id');
    const status = str(r, 'status');
    if (!reference_id || !status) throw bad('holds a result without reference_id or status');
    const message = str(r, 'message') ?? str(r, 'reason') ?? str(r, 'error');
    results.push({
      reference_id,
      status: status.toLowerCase(),
      transaction_id: str(r, 'transaction_id'),
      amount: num(r, 'amount'),
      currency: str(r, 'currency'),
      charges: num(r, 'charges'),
      ...(message ? { message } : {}),
    });
  }
  return {
    success_count: num(data, 'success_count') ?? 0,
    failed_count: num(data, 'failed_count') ?? 0,
    batch_reference: str(data, 'batch_reference'),
    results,
    messages: env.messages,
  };
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
