/**
 * "Did you mean": the references a service's runs hold that are one edit (a character added,
 * dropped or changed) or a case change away from one the service did not find. The history is
 * never read whole: the references one edit or a case change away are written out (a few
 * thousand for a reference of ten characters) and looked up at once through the index on
 * `(reference_id, run)`, as a send looks up its own references, so the search costs the same
 * in a history of ten payouts or ten million, and no index is added that each send would pay.
 * An edit adds or changes a printable ASCII character; a reference longer than MAX_LENGTH gets
 * its case changes and dropped characters looked up only.
 */
import type { Dialect } from './dialect.js';
import { serviceIdOf } from './hash.js';
import { jsonTexts } from './journal-sql.js';
import type { HeldReference } from './checks.js';
import type { RowReader } from './runs.js';

/** Characters an edit may add or put in another's place: printable ASCII. */
const ALPHABET = Array.from({ length: 0x7f - 0x20 }, (_, i) => String.fromCharCode(0x20 + i));
/** Longer references get no added or changed characters looked up (their count grows so). */
const MAX_LENGTH = 64;
/** Letters whose every case is tried; beyond, the usual slips only (a whole case, one letter). */
const MAX_CASED = 10;

/**
 * The references of the service's runs among the candidates (one JSON array), the latest run
 * first. The candidates are found first, each by a probe of the reference index: a planner
 * left to itself may read every payout of the service's runs instead.
 */
function heldSql(d: Dialect): string {
  const among =
    d === 'pg'
      ? `= ANY (ARRAY(SELECT value FROM ${jsonTexts(d)}))`
      : `IN (SELECT value FROM ${jsonTexts(d)})`;
  return `WITH c AS MATERIALIZED (
    SELECT p.run, p.row, p.reference_id FROM payouts p WHERE p.reference_id ${among})
  SELECT c.reference_id, r.run_id, coalesce(i.sent_at, r.created_at) AS sent_at
  FROM c JOIN runs r ON r.id = c.run
    LEFT JOIN intents i ON i.run = c.run AND i.row = c.row
  WHERE r.service_id = ? AND r.run_id IS NOT NULL
  ORDER BY r.updated_at DESC, r.id DESC, c.row`;
}

/** `ref` in other cases: every one when it has few letters, else the usual slips. */
function caseChanges(ref: string, out: Set<string>): void {
  const letters = [...ref].flatMap((c, i) => (c.toLowerCase() !== c.toUpperCase() ? [i] : []));
  const chars = [...ref];
  const flip = (c: string) => (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase());
  if (letters.length <= MAX_CASED) {
    for (let mask = 1; mask < 2 ** letters.length; mask++) {
      const v = [...chars];
      letters.forEach((at, bit) => {
        if (mask & (2 ** bit)) v[at] = flip(v[at]!);
      });
      out.add(v.join(''));
    }
    return;
  }
  out.add(ref.toLowerCase());
  out.add(ref.toUpperCase());
  out.add(chars.map(flip).join(''));
  for (const at of letters) out.add(chars.map((c, i) => (i === at ? flip(c) : c)).join(''));
}

/** Every reference one edit away from `ref` (added and changed characters: ALPHABET's). */
function oneEdits(ref: string, out: Set<string>): void {
  for (let i = 0; i < ref.length; i++) out.add(ref.slice(0, i) + ref.slice(i + 1));
  if (ref.length > MAX_LENGTH) return;
  for (let i = 0; i <= ref.length; i++) {
    for (const c of ALPHABET) {
      out.add(ref.slice(0, i) + c + ref.slice(i));
      if (i < ref.length) out.add(ref.slice(0, i) + c + ref.slice(i + 1));
    }
  }
}

/** The references a search looks up for `ref`: one edit or a case change away, not itself. */
export function nearCandidates(ref: string): string[] {
  const out = new Set<string>();
  caseChanges(ref, out);
  oneEdits(ref, out);
  out.delete(ref);
  return [...out];
}

/**
 * The references a service's runs hold that are near `ref` (isNear), each with the latest run
 * that holds it; the exact reference itself is left out.
 */
export async function nearReferences(
  read: RowReader,
  dialect: Dialect,
  service: string,
  ref: string,
): Promise<HeldReference[]> {
  const candidates = JSON.stringify(nearCandidates(ref));
  const rows = (await read(heldSql(dialect), [
    candidates,
    serviceIdOf(service),
  ])) as HeldReference[];
  const seen = new Set<string>();
  const near: HeldReference[] = [];
  for (const r of rows) {
    if (seen.has(r.reference_id) || !isNear(ref, r.reference_id)) continue;
    seen.add(r.reference_id);
    near.push(r);
  }
  return near;
}

/**
 * Whether two references differ by one edit (a character added, dropped or changed) or only
 * by case: `m-0500000` is near `M-0500000` and `m-0500001`, not `M-0100000`.
 */
export function isNear(a: string, b: string): boolean {
  return a !== b && (a.toLowerCase() === b.toLowerCase() || oneEdit(a, b));
}

/** Whether b is a with one character added, dropped or changed. */
function oneEdit(a: string, b: string): boolean {
  if (a === b || Math.abs(a.length - b.length) > 1) return false;
  const [short, long] = a.length <= b.length ? [a, b] : [b, a];
  let i = 0;
  while (i < short.length && short[i] === long[i]) i++;
  const skip = short.length === long.length ? 1 : 0;
  return short.slice(i + skip) === long.slice(i + 1);
}
