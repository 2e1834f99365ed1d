/** The lines of a v1 run journal (read only, for the one-time import): one JSON record per line. */

/** First line of a journal: what the run is. */
export interface RunRecord {
  t: 'run';
  v: 1;
  run_id: string;
  service: string;
  client_id: string;
  inputs: string[];
  input_hash: string;
  created_at: string;
  payout_count: number;
  batch_reference?: string;
}

/** Written and made durable before a request goes on the wire: [reference, payout hash] pairs. */
export interface IntentRecord {
  t: 'intent';
  req: number;
  at: string;
  p: Array<[string, string]>;
}

/** One result: [ref, status, transaction_id, charges, amount, currency, message]. */
export type OutcomeTuple = [
  string,
  string | null,
  string | null,
  number | null,
  number | null,
  string | null,
  string | null,
];

/** The service's per-payout results of a request (req -1 when established by reading back). */
export interface OutcomeRecord {
  t: 'outcome';
  req: number;
  at: string;
  r: OutcomeTuple[];
}

/** A request that provably did not apply: its references are free to send again. */
export interface NotAppliedRecord {
  t: 'not_applied';
  req: number;
  at: string;
  refs: string[];
  why: string;
}

/** References whose outcome could not be established: they stay in flight. */
export interface UnknownRecord {
  t: 'unknown';
  at: string;
  refs: string[];
  why: string;
}

/** Any journal line. */
export type JournalRecord =
  | RunRecord
  | IntentRecord
  | OutcomeRecord
  | NotAppliedRecord
  | UnknownRecord;

/** The journal format this code writes and reads. */
export const JOURNAL_VERSION = 1;

type Obj = Record<string, unknown>;

/** Whether a value is a plain JSON object. */
function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Whether a value is an array of strings. */
function isStrings(v: unknown): v is string[] {
  return Array.isArray(v) && v.every((s) => typeof s === 'string');
}

/** Whether a value is a request id: an integer, -1 for "no request". */
function isReq(v: unknown): v is number {
  return Number.isSafeInteger(v) && (v as number) >= -1;
}

/** Whether a value is a string or null. */
function isStrOrNull(v: unknown): boolean {
  return v === null || typeof v === 'string';
}

/** Whether a value is a number or null. */
function isNumOrNull(v: unknown): boolean {
  return v === null || typeof v === 'number';
}

/** Whether a value is one outcome tuple. */
function isOutcomeTuple(v: unknown): v is OutcomeTuple {
  return (
    Array.isArray(v) &&
    v.length === 7 &&
    typeof v[0] === 'string' &&
    isStrOrNull(v[1]) &&
    isStrOrNull(v[2]) &&
    isNumOrNull(v[3]) &&
    isNumOrNull(v[4]) &&
    isStrOrNull(v[5]) &&
    isStrOrNull(v[6])
  );
}

/** Whether a value is a run header this version understands. */
function isRunRecord(o: Obj): boolean {
  return (
    o.v === JOURNAL_VERSION &&
    typeof o.run_id === 'string' &&
    typeof o.service === 'string' &&
    typeof o.client_id === 'string' &&
    isStrings(o.inputs) &&
    typeof o.input_hash === 'string' &&
    typeof o.created_at === 'string' &&
    Number.isSafeInteger(o.payout_count) &&
    (o.batch_reference === undefined || typeof o.batch_reference === 'string')
  );
}

/** Whether a parsed object has the fields of its record type. */
function isValidRecord(o: Obj): boolean {
  switch (o.t) {
    case 'run':
      return isRunRecord(o);
    case 'intent':
      return (
        isReq(o.req) &&
        typeof o.at === 'string' &&
        Array.isArray(o.p) &&
        o.p.every((x) => isStrings(x) && x.length === 2)
      );
    case 'outcome':
      return (
        isReq(o.req) && typeof o.at === 'string' && Array.isArray(o.r) && o.r.every(isOutcomeTuple)
      );
    case 'not_applied':
      return (
        isReq(o.req) && typeof o.at === 'string' && isStrings(o.refs) && typeof o.why === 'string'
      );
    case 'unknown':
      return typeof o.at === 'string' && isStrings(o.refs) && typeof o.why === 'string';
    default:
      return false;
  }
}

/** Parses one journal line; undefined when it is not a complete, valid record. */
export function parseRecord(line: string): JournalRecord | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (!isObj(value) || !isValidRecord(value)) return undefined;
  return value as unknown as JournalRecord;
}

/** Whether a parsed line is a run header of a newer format (to explain it, not to call it damaged). */
export function isNewerVersionHeader(line: string): boolean {
  try {
    const o: unknown = JSON.parse(line);
    return isObj(o) && o.t === 'run' && typeof o.v === 'number' && o.v > JOURNAL_VERSION;
  } catch {
    return false;
  }
}
