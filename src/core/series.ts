/**
 * Runs of one series, and what changed between two of them (docs/approvals.md#series): the
 * approver's screen compares a prepared run with earlier ones of its series, and a send's
 * summary with its series' last run. Pure and deterministic: every match says which field made
 * it, so a person can check it.
 */
import { groupThousands } from '../money/amount.js';
import { displayText } from '../output/display.js';
import { canonicalDecimal } from '../state/hash.js';
import type { PayoutRow } from '../state/run-state.js';

/** Month names a text may carry (English and German, in full and as 3 letters), lower case. */
const MONTHS = new Set(
  [
    'january february march april may june july august september october november december',
    'jan feb mar apr jun jul aug sep sept oct nov dec',
    'januar jänner februar märz maerz mai juni juli oktober dezember mär mrz okt dez',
  ].flatMap((s) => s.split(' ')),
);

/** A number that is a year: 4 digits from 1900 to 2099. */
const isYear = (t: string) => /^(19|20)\d\d$/.test(t);
/** A number of 1 or 2 digits from 1 to `most`: a month's (12) or a day's (31). */
const upTo = (t: string, most: number) =>
  /^\d{1,2}$/.test(t) && Number(t) >= 1 && Number(t) <= most;

/**
 * A text with the time it names left out, so that November's and December's read alike:
 * lower case; a month's name is `<month>`; a year (1900-2099) `<year>`; a number of 1 or 2
 * digits next to a year `<month>`, and one next to that month `<day>` (2026-11-30); a date
 * of 8 digits (20261130) `<date>`. Every other character is kept.
 */
export function textPattern(text: string): string {
  const tokens = text.toLowerCase().match(/\p{L}+|\d+|[^\p{L}\d]/gu) ?? [];
  const out = tokens.map((t) => {
    if (MONTHS.has(t)) return '<month>';
    if (isYear(t)) return '<year>';
    if (/^(19|20)\d\d(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])$/.test(t)) return '<date>';
    return t;
  });
  // Numbers beside a year (one separator between): 2026-11, 11/2026, 2026-11-30, 30.11.2026.
  const near = (i: number, d: number) =>
    out[i + 2 * d] === '<year>' && !/\w/.test(out[i + d] ?? 'x');
  for (let i = 0; i < out.length; i++) {
    if (!upTo(out[i]!, 12)) continue;
    if (near(i, 1) || near(i, -1)) out[i] = '<month>';
  }
  // A day only in a date with its year: NOV-3 is the third of November's payouts.
  for (let i = 0; i < out.length && out.includes('<year>'); i++) {
    if (!upTo(out[i]!, 31)) continue;
    const sep = (d: number) => !/\w/.test(out[i + d] ?? 'x');
    if ((out[i - 2] === '<month>' && sep(-1)) || (out[i + 2] === '<month>' && sep(1)))
      out[i] = '<day>';
  }
  return out.join('');
}

/** A file's name without its folder. */
function baseName(path: string): string {
  return path.split(/[\\/]/).pop() ?? path;
}

/** What a run is, for its series: its batch reference, its input files, its recipients. */
export interface SeriesRun {
  batch_reference: string | null;
  inputs: readonly string[];
}

/** Why two runs are one series: the first rule that holds, and what it matched. */
export interface SeriesWhy {
  by: 'batch_reference' | 'input_name' | 'recipients';
  /** The pattern both share ("payroll-<year>-<month>"), or "38 of 40 recipients". */
  pattern: string;
}

/**
 * Whether `then` is of `now`'s series by its names: the same batch reference pattern (both
 * set), else an input file name pattern both runs have. Undefined: the names do not tell (the
 * recipients may: seriesByRecipients).
 */
export function seriesByName(now: SeriesRun, then: SeriesRun): SeriesWhy | undefined {
  if (now.batch_reference !== null && then.batch_reference !== null) {
    const p = textPattern(now.batch_reference);
    if (p === textPattern(then.batch_reference)) return { by: 'batch_reference', pattern: p };
  }
  const theirs = new Set(then.inputs.map((f) => textPattern(baseName(f))));
  const shared = now.inputs.map((f) => textPattern(baseName(f))).find((p) => theirs.has(p));
  return shared === undefined ? undefined : { by: 'input_name', pattern: shared };
}

/**
 * Whether two runs are one series by their recipients: at least half of each run's distinct
 * recipients are the other's too (so a run more than twice the other's size never is).
 */
export function seriesByRecipients(
  now: ReadonlySet<string>,
  then: ReadonlySet<string>,
): SeriesWhy | undefined {
  let shared = 0;
  for (const r of now) if (then.has(r)) shared++;
  const most = Math.max(now.size, then.size);
  if (shared === 0 || shared * 2 < most) return undefined;
  return { by: 'recipients', pattern: `${shared} of ${most} recipients` };
}

/** A payout as two runs are compared on it: its description null where not known (a dry run keeps none). */
export type MatchRow = PayoutRow;

/** One side of a change: the payout as it was, or is. */
export interface RowSide {
  reference_id: string;
  amount: string;
  currency: string;
  recipient: string;
}

/**
 * What paired two rows: the same reference_id, the same recipient (and currency), the same
 * reference pattern, description pattern or amount (each unique in both runs), or a retry's
 * original.
 */
export type MatchedBy =
  | 'reference_id'
  | 'recipient'
  | 'reference_pattern'
  | 'description'
  | 'amount'
  | 'retry_of';

/** A field a change changed. */
export type ChangedField = 'amount' | 'currency' | 'recipient' | 'description';

/** A row added, removed or changed between two runs (a retry and its original too). */
export interface RowChange {
  change: 'added' | 'removed' | 'changed';
  before: RowSide | null;
  after: RowSide | null;
  /** What paired the two rows (null: added or removed). */
  matched_by: MatchedBy | null;
  /** The value they share under that rule: a pattern, an amount, a reference (null: none). */
  matched_on: string | null;
  /** What differs; `recipient` among them: "recipient changed". */
  fields: ChangedField[];
}

const side = (r: MatchRow): RowSide => ({
  reference_id: r.reference_id,
  amount: r.amount,
  currency: r.currency,
  recipient: r.recipient,
});

/** The fields two paired rows differ in (description only where both are known). */
function fieldsOf(a: MatchRow, b: MatchRow, withDescription: boolean): ChangedField[] {
  const out: ChangedField[] = [];
  if (canonicalDecimal(a.amount) !== canonicalDecimal(b.amount)) out.push('amount');
  if (a.currency !== b.currency) out.push('currency');
  if (a.recipient !== b.recipient) out.push('recipient');
  if (withDescription && a.description !== null && b.description !== null)
    if (a.description !== b.description) out.push('description');
  return out;
}

/** Rows by key; a key seen again gets its count appended, so no row is lost. */
function keyed(rows: MatchRow[], key: (r: MatchRow) => string): Map<string, MatchRow> {
  const out = new Map<string, MatchRow>();
  for (const r of rows) {
    let k = key(r);
    for (let n = 2; out.has(k); n++) k = `${key(r)}\u0000#${n}`;
    out.set(k, r);
  }
  return out;
}

/** A key's rows that are the only one of their key in their whole run (null key: none). */
function uniques(rows: MatchRow[], all: MatchRow[], key: (r: MatchRow) => string | null) {
  const counts = new Map<string, number>();
  for (const r of all) {
    const k = key(r);
    if (k !== null) counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  const out = new Map<string, MatchRow>();
  for (const r of rows) {
    const k = key(r);
    if (k !== null && counts.get(k) === 1) out.set(k, r);
  }
  return out;
}

/** The passes after reference and recipient, in order: each pairs rows unique by its key. */
const LOOSE: Array<[MatchedBy, (r: MatchRow) => string | null]> = [
  ['reference_pattern', (r) => textPattern(r.reference_id)],
  ['description', (r) => (r.description?.trim() ? textPattern(r.description.trim()) : null)],
  ['amount', (r) => `${r.currency} ${canonicalDecimal(r.amount)}`],
];

/** What diffRows found: the pairs, and how the runs were matched first. */
export interface Diff {
  /** reference_id when the runs share any, else recipient: how most rows were paired. */
  matched_by: 'reference_id' | 'recipient';
  changes: RowChange[];
}

/**
 * What changed from `then` to `now`: rows paired by reference_id, then by recipient and
 * currency (a month's new references), then, of the rows left, by reference pattern,
 * description pattern or amount where that value is unique in both runs. A pair with another
 * recipient is "recipient changed", never an added and a removed row.
 */
export function diffRows(then: MatchRow[], now: MatchRow[]): Diff {
  const refs = new Set(now.map((r) => r.reference_id));
  const byRef = then.some((r) => refs.has(r.reference_id));
  const left = { before: new Set(then), now: new Set(now) };
  const changes: RowChange[] = [];
  const pair = (t: MatchRow, n: MatchRow, by: MatchedBy, on: string | null) => {
    left.before.delete(t);
    left.now.delete(n);
    const fields = fieldsOf(t, n, by === 'reference_id');
    if (fields.length)
      changes.push({
        change: 'changed',
        before: side(t),
        after: side(n),
        matched_by: by,
        matched_on: on,
        fields,
      });
  };
  const exact = (by: 'reference_id' | 'recipient', key: (r: MatchRow) => string) => {
    const before = keyed([...left.before], key);
    for (const [k, n] of keyed([...left.now], key)) {
      const t = before.get(k);
      if (t) pair(t, n, by, null);
    }
  };
  exact('reference_id', (r) => r.reference_id);
  exact('recipient', (r) => `${r.recipient}\u0000${r.currency}`);
  for (const [by, key] of LOOSE) {
    const before = uniques([...left.before], then, key);
    for (const [k, n] of uniques([...left.now], now, key)) {
      const t = before.get(k);
      if (t) pair(t, n, by, k);
    }
  }
  for (const n of now) if (left.now.has(n)) changes.push(lone('added', n));
  for (const t of then) if (left.before.has(t)) changes.push(lone('removed', t));
  return { matched_by: byRef ? 'reference_id' : 'recipient', changes: ordered(changes, now) };
}

/** An added or removed row. */
function lone(change: 'added' | 'removed', r: MatchRow): RowChange {
  const s = side(r);
  return {
    change,
    before: change === 'removed' ? s : null,
    after: change === 'added' ? s : null,
    matched_by: null,
    matched_on: null,
    fields: [],
  };
}

/** Recipient changes first, then other changes, added and removed; each in row order. */
function ordered(changes: RowChange[], now: MatchRow[]): RowChange[] {
  const at = new Map(now.map((r, i) => [r.reference_id, i]));
  const rank = (c: RowChange) =>
    c.fields.includes('recipient') ? 0 : c.change === 'changed' ? 1 : c.change === 'added' ? 2 : 3;
  return changes
    .map((c, i) => ({ c, i }))
    .sort((a, b) => {
      const d = rank(a.c) - rank(b.c);
      if (d) return d;
      const pos = (c: RowChange) => (c.after ? (at.get(c.after.reference_id) ?? 0) : 0);
      return pos(a.c) - pos(b.c) || a.i - b.i;
    })
    .map(({ c }) => c);
}

/**
 * A retry row against the original it retries: a change when its amount, currency or
 * recipient differs (a retry pays what its original would have), else undefined.
 */
export function retryChange(original: RowSide, retry: RowSide): RowChange | undefined {
  const fields = fieldsOf(
    { ...original, row: 0, description: null },
    { ...retry, row: 0, description: null },
    false,
  );
  if (!fields.length) return undefined;
  const only = (r: RowSide): RowSide => ({
    reference_id: r.reference_id,
    amount: r.amount,
    currency: r.currency,
    recipient: r.recipient,
  });
  return {
    change: 'changed',
    before: only(original),
    after: only(retry),
    matched_by: 'retry_of',
    matched_on: original.reference_id,
    fields,
  };
}

/** How many changes change a recipient. */
export function recipientChanges(changes: readonly RowChange[]): number {
  return changes.filter((c) => c.fields.includes('recipient')).length;
}

/** An amount for a person: "EUR 45,000.00". */
export function amountText(amount: string, currency: string): string {
  return `${currency} ${groupThousands(amount)}`;
}

/** Why a run is of this one's series, in words. */
export function seriesText(w: SeriesWhy): string {
  if (w.by === 'recipients') return `${w.pattern} shared`;
  const what = w.by === 'batch_reference' ? 'batch reference' : 'input name';
  return `${what} pattern ${JSON.stringify(w.pattern)}`;
}

/** "3 added, 1 removed, 2 changed (1 recipient changed)". */
export function countsText(changes: readonly RowChange[]): string {
  const count = (k: RowChange['change']) => changes.filter((x) => x.change === k).length;
  const moved = recipientChanges(changes);
  const also = moved ? ` (${moved} recipient${moved === 1 ? '' : 's'} changed)` : '';
  return `${count('added')} added, ${count('removed')} removed, ${count('changed')} changed${also}`;
}

/**
 * Each change a line, indented, the first `most` (undefined: all), then how many more and
 * where they are (`more`); `usual`: how most rows matched, not repeated on each.
 */
export function changeLines(
  changes: readonly RowChange[],
  opts: { most?: number; usual?: string; more?: string } = {},
): string[] {
  const shown = opts.most === undefined ? changes : changes.slice(0, opts.most);
  const lines = shown.map((x) => `  ${changeText(x, opts.usual)}`);
  const more = changes.length - shown.length;
  if (more) lines.push(`  and ${more} more (${opts.more ?? '--all lists them, as does --json'})`);
  return lines;
}

/** What paired two rows, in words: "; matched by description "gehalt <month> felix 20"". */
function matchedText(x: RowChange, usual?: string): string {
  if (!x.matched_by || x.matched_by === usual || x.matched_by === 'retry_of') return '';
  const by = x.matched_by.replace('_', ' ');
  return `; matched by ${by}${x.matched_on === null ? '' : ` ${JSON.stringify(x.matched_on)}`}`;
}

/**
 * A row's change in words: "recipient changed: DEC-3 EUR 8,000.00: was e3@ex.com (NOV-3), now
 * mallory@…; matched by reference pattern "<month>-3"", "changed: DEC-5 EUR 45,000.00 to …,
 * was NOV-5 EUR 8,000.00 to …", "added: …", "removed: …".
 */
export function changeText(x: RowChange, usual?: string): string {
  const words = (r: RowSide) =>
    `${displayText(r.reference_id)} ${amountText(r.amount, r.currency)} to ${displayText(r.recipient)}`;
  if (x.change === 'added') return `added: ${words(x.after!)}`;
  if (x.change === 'removed') return `removed: ${words(x.before!)}`;
  const b = x.before!;
  const a = x.after!;
  const how = matchedText(x, usual);
  const original = x.matched_by === 'retry_of' ? 'its original ' : '';
  if (!x.fields.includes('recipient'))
    return `changed: ${words(a)}, was ${original}${words(b)}${how}`;
  const amount =
    x.fields.includes('amount') || x.fields.includes('currency')
      ? `, ${amountText(b.amount, b.currency)}`
      : '';
  return `recipient changed: ${displayText(a.reference_id)} ${amountText(a.amount, a.currency)}: was ${displayText(b.recipient)} (${original}${displayText(b.reference_id)}${amount}), now ${displayText(a.recipient)}${how}`;
}
