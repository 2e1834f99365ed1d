import type { CreateAnswer, CreateResult, PayoutRecord, PayoutRequest } from '../../api/types.js';
import { type ApiError, type CredentialsError, NetworkError } from '../../errors.js';
import { sameDecimal } from '../../money/amount.js';
import { isDocumentedStatus } from '../../domain/statuses.js';
import type { Answered } from '../pace.js';

/**
 * The one rule of "never pay twice" (the README's table mirrors it). A payout is recorded
 * not applied only on proof:
 *   (a) the request provably never reached the service (refused connection, DNS, TLS, connect
 *       timeout: no byte written);
 *   (b) the service refused the whole request with a status that means "not processed" and
 *       sent no per-payout results: 401, 403, 429 or 413;
 *   (c) read-backs after the quiet time, twice and a quiet time apart, found no such payout
 *       (what that trusts: docs/never-twice.md).
 * Per-payout results win under any status and any `success`. Everything else is read back.
 * Message text never decides anything.
 */

/** What one create exchange proves about the request as a whole. */
export type RequestVerdict =
  /** Nothing of the request was applied: (a) or (b). */
  | {
      kind: 'not-applied';
      reason: 'not-sent' | 'credentials' | 'rate-limited' | 'too-large';
      error: Error;
      retryAfterMs?: number;
    }
  /** The service stated results: each payout is judged by its own (see judgeResults). */
  | { kind: 'results'; answer: CreateAnswer }
  /**
   * Nothing is proven: every payout is read back. `refused` when the service turned the
   * request down whole (3xx, 4xx, or success false below 500): payouts it does not have are
   * then reported not sent with its message instead of being sent again.
   */
  | { kind: 'read-back'; error: Error; refused: boolean; retryAfterMs?: number };

/** Classifies a create exchange: the answer, or the error that stood for no answer. */
export function judgeExchange(exchange: {
  answer?: CreateAnswer;
  error?: unknown;
}): RequestVerdict {
  const { answer } = exchange;
  if (!answer) {
    const error = asError(exchange.error);
    if (error instanceof NetworkError && !error.mayHaveBeenApplied) {
      return { kind: 'not-applied', reason: 'not-sent', error };
    }
    return { kind: 'read-back', error, refused: false };
  }
  if (answer.response) return { kind: 'results', answer };
  const error: ApiError | CredentialsError | Error =
    answer.error ?? new Error(`unexpected answer (HTTP ${answer.status})`);
  const retryAfterMs = answer.retryAfterMs;
  const s = answer.status;
  if (s === 401 || s === 403) return { kind: 'not-applied', reason: 'credentials', error };
  if (s === 429) return { kind: 'not-applied', reason: 'rate-limited', error, retryAfterMs };
  if (s === 413) return { kind: 'not-applied', reason: 'too-large', error };
  const refused = s >= 300 && s < 500;
  return { kind: 'read-back', error, refused, retryAfterMs };
}

/** A payout as sent, with whatever the caller keeps beside it. */
export interface Sent {
  payout: PayoutRequest;
}

/** Why a payout's outcome must be read back, and whether "not found" can prove anything. */
export interface ReadBackReason<T extends Sent> {
  item: T;
  why: string;
  /**
   * The service stated this result, with a status it does not document: the payout exists, so
   * a read-back can only refine the status; without a documented one the stated one stays.
   */
  stated?: CreateResult;
}

/** What a results answer says, payout by payout. */
export interface ResultsJudgement<T extends Sent> {
  stated: Array<{ item: T; result: CreateResult }>;
  readBack: Array<ReadBackReason<T>>;
  /** References the service answered for but was not sent in this request. */
  strays: string[];
}

/**
 * sameDecimal, with the usual case first: the service's number written as JavaScript writes
 * it is our very text, in plain digits (no exponent), so it is the same decimal.
 */
function sameAmount(text: string, value: number | string): boolean {
  if (typeof value === 'number' && Number.isFinite(value)) {
    const written = String(value);
    if (written === text && !written.includes('e')) return true;
  }
  return sameDecimal(text, value);
}

/** Checks one result against the payout sent; returns why it cannot be taken as stated. */
function resultProblem(p: PayoutRequest, r: CreateResult): string | undefined {
  if (r.amount !== undefined && !sameAmount(p.amount, r.amount)) {
    return `the service's result says amount ${r.amount}, not the ${p.amount} sent`;
  }
  if (
    r.currency !== undefined &&
    r.currency !== p.currency &&
    r.currency.toUpperCase() !== p.currency.toUpperCase()
  ) {
    return `the service's result says currency ${r.currency}, not the ${p.currency} sent`;
  }
  return undefined;
}

/** Judges each payout of a request by the results the service stated for it. */
export function judgeResults<T extends Sent>(
  results: CreateResult[],
  items: T[],
): ResultsJudgement<T> {
  const byRef = new Map<string, CreateResult[]>();
  for (const r of results) {
    const list = byRef.get(r.reference_id);
    if (list) list.push(r);
    else byRef.set(r.reference_id, [r]);
  }
  const out: ResultsJudgement<T> = { stated: [], readBack: [], strays: [] };
  const sent = new Set<string>();
  for (const item of items) {
    const ref = item.payout.reference_id;
    sent.add(ref);
    const list = byRef.get(ref);
    if (!list) {
      out.readBack.push({ item, why: 'the service did not report this payout' });
      continue;
    }
    const statuses = list.length === 1 ? undefined : new Set(list.map((r) => r.status));
    if (statuses && statuses.size > 1) {
      const why = `the service reported this payout twice, as ${[...statuses].join(' and ')}`;
      out.readBack.push({ item, why });
      continue;
    }
    const result = list[0]!;
    const problem = resultProblem(item.payout, result);
    if (problem) out.readBack.push({ item, why: problem });
    else if (!isDocumentedStatus(result.status)) {
      const why = `the service reported status "${result.status}", which it does not document`;
      out.readBack.push({ item, why, stated: result });
    } else out.stated.push({ item, result });
  }
  for (const ref of byRef.keys()) if (!sent.has(ref)) out.strays.push(ref);
  return out;
}

/** What a record read back by reference says about the payout we sent under it. */
export type RecordMatch =
  | { kind: 'ours' }
  /** Another payout under our reference: ours was not made and must not be sent under it. */
  | { kind: 'other-payout'; why: string }
  /** The answer is not a record of that reference at all: it proves nothing. */
  | { kind: 'wrong-record'; why: string };

/**
 * Checks a read-back record against the payout sent: reference_id, and the amount (as
 * decimals), currency and recipient when the record has them.
 */
export function matchRecord(p: PayoutRequest, rec: PayoutRecord): RecordMatch {
  if (rec.reference_id !== p.reference_id) {
    return {
      kind: 'wrong-record',
      why: `asked for ${JSON.stringify(p.reference_id)}, the service answered with the record of ${JSON.stringify(rec.reference_id)}`,
    };
  }
  const diffs: string[] = [];
  const amount = rec.amount as unknown;
  if (amount !== undefined && amount !== null) {
    const readable = typeof amount === 'number' || typeof amount === 'string';
    if (!readable || !sameDecimal(p.amount, amount)) diffs.push(`amount ${String(amount)}`);
  }
  if (typeof rec.currency === 'string' && rec.currency.toUpperCase() !== p.currency.toUpperCase()) {
    diffs.push(`currency ${rec.currency}`);
  }
  if (typeof rec.recipient === 'string' && rec.recipient !== p.recipient) {
    diffs.push(`recipient ${JSON.stringify(rec.recipient)}`);
  }
  if (!diffs.length) return { kind: 'ours' };
  return {
    kind: 'other-payout',
    why: `the service holds another payout under this reference_id (${diffs.join(', ')}); this payout was not sent: send it again under a new reference_id`,
  };
}

/** Any thrown value as an Error. */
function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

/** What an exchange tells the pace: a 429, an answer (its latency counts), or neither. */
export function paceSignal(exchange: { answer?: CreateAnswer }): Answered {
  const status = exchange.answer?.status;
  if (status === 503) return { kind: 'overloaded' };
  if (status === undefined || status >= 500) return { kind: 'failed' };
  if (status === 429) return { kind: 'throttled', retryAfterMs: exchange.answer?.retryAfterMs };
  return { kind: 'ok' };
}
