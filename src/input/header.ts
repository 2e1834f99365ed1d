/** Matching a header row to the payout fields, shared by the CSV and .xlsx readers. */
import type { PayoutChecker, RowLocation } from './fields.js';
import { guessMap, mapWord } from './header-names.js';
import { normalizeHeader } from './options.js';
import {
  type IntakeSink,
  PAYOUT_FIELDS,
  type PayoutField,
  REQUIRED_FIELDS,
  type Renames,
} from './types.js';

const LISTED_HEADERS = 12;

/** Which column (0-based) holds each field; description is -1 when there is none. */
export interface HeaderColumns {
  reference: number;
  amount: number;
  currency: number;
  recipient: number;
  description: number;
  /** The new_reference_id column of a retry file (-1: none): a value there replaces reference_id. */
  newReference: number;
}

/** The normalized name of a retry file's column of new references (send/report.ts writes it). */
const NEW_REFERENCE = 'newreferenceid';

/**
 * A header cell that says its column's amounts are written with a decimal comma, as the
 * reports and retry files of `payouts` write it for a spreadsheet that reads `1234,56`:
 * `amount (decimal comma)` (in any case). The file then reads without --decimal-comma.
 */
const DECIMAL_COMMA_MARKED = /^(.*?)\s*\(\s*decimal[\s_-]*comma\s*\)\s*$/i;

/** Examples of renamed rows a summary shows. */
const RENAME_EXAMPLES = 3;

/** The reference a row is sent under, and the one it retries when that is a new_reference_id. */
export interface RowReference<T> {
  reference: T;
  /** The row's reference_id, when its new_reference_id is filled in (the payout it retries). */
  retryOf?: T;
}

/**
 * The reference a row is sent under: its new_reference_id when one is filled in (counted in
 * `renames`, for the summary a person confirms), else its reference_id.
 */
export function rowReference<T>(
  c: HeaderColumns,
  read: (i: number) => T,
  blank: (v: T) => boolean,
  renames?: Renames,
): RowReference<T> {
  if (c.newReference !== -1) {
    const fresh = read(c.newReference);
    if (!blank(fresh)) {
      const original = read(c.reference);
      if (renames) {
        renames.count += 1;
        if (renames.examples.length < RENAME_EXAMPLES) {
          renames.examples.push([String(original ?? '').trim(), String(fresh).trim()]);
        }
      }
      return { reference: fresh, retryOf: original };
    }
  }
  return { reference: read(c.reference) };
}

/** The renames of a file for its FileMeta, when there were any, and whether it is a retry file. */
export function renamesMeta(
  renames: Renames,
  columns: HeaderColumns | undefined,
): { renamed?: Renames; retryFile?: true } {
  return {
    ...(renames.count ? { renamed: renames } : {}),
    ...(columns !== undefined && columns.newReference !== -1 ? { retryFile: true } : {}),
  };
}

/** What matching a header needs besides the header's cells. */
export interface HeaderMatching {
  file: string;
  /** Normalized column name -> field. */
  names: Map<string, PayoutField>;
  map: Partial<Record<PayoutField, string>>;
  checker: PayoutChecker;
  sink: IntakeSink;
  /** Added to a missing-column message when the header reads as a single column. */
  singleColumnHint?: string;
}

/** Lists header names for a message, shortened when there are many. */
function listHeaders(rec: string[]): string {
  const names = rec.slice(0, LISTED_HEADERS).map((h) => JSON.stringify(h.trim()));
  if (rec.length > LISTED_HEADERS) names.push(`and ${rec.length - LISTED_HEADERS} more`);
  return names.join(', ');
}

/** "a", "a and b", "a, b and c". */
function andList(words: string[]): string {
  return words.length < 2
    ? (words[0] ?? '')
    : `${words.slice(0, -1).join(', ')} and ${words.at(-1)}`;
}

/** The --map a refusal offers: the user's own, with the columns their names suggest. */
function suggestedMap(
  rec: string[],
  missing: readonly PayoutField[],
  h: HeaderMatching,
  taken: ReadonlySet<number>,
): Partial<Record<PayoutField, string>> {
  const open = PAYOUT_FIELDS.filter(
    (f) => h.map[f] === undefined && (missing.includes(f) || f === 'description'),
  );
  const guessed = { ...guessMap(rec, open, taken), ...leftOver(rec, missing, taken, h) };
  // The description is offered only with the columns it goes with, never alone.
  return missing.some((f) => guessed[f] !== undefined) ? { ...h.map, ...guessed } : { ...h.map };
}

/**
 * The one column no name claims, for the one required field the names left without a column
 * ("Vorgang" for reference_id beside Betrag, Währung, Empfänger): offered to be checked, as
 * the rest of the --map is. Nothing when more than one of either is left, or when no other
 * column was known by another language's name (`notes` is not a recipient).
 */
function leftOver(
  rec: string[],
  missing: readonly PayoutField[],
  taken: ReadonlySet<number>,
  h: HeaderMatching,
): Partial<Record<PayoutField, string>> {
  const named = guessMap(
    rec,
    PAYOUT_FIELDS.filter((f) => h.map[f] === undefined),
    taken,
  );
  const fields = missing.filter((f) => f !== 'description' && named[f] === undefined);
  const claimed = new Set(Object.values(named));
  const free = rec
    .map((name, i) => ({ name: name.trim(), i }))
    .filter(({ name, i }) => name !== '' && !taken.has(i) && !claimed.has(name));
  // Only in an export that names its other columns in another language, not for any extra column.
  const foreign = Object.keys(named).length > 0;
  return foreign && fields.length === 1 && free.length === 1 ? { [fields[0]!]: free[0]!.name } : {};
}

/**
 * Reports the required columns a header lacks, in one problem that lists the header once:
 * those named by --map that are not there, then the others with the --map to name them,
 * built from the header's own names where they are known ones (Betrag, Montant, Importe).
 */
function reportMissing(
  missing: readonly PayoutField[],
  rec: string[],
  at: { location: RowLocation; h: HeaderMatching; taken: ReadonlySet<number> },
): void {
  const { h } = at;
  const mapped = missing.filter((f) => h.map[f] !== undefined);
  const plain = missing.filter((f) => h.map[f] === undefined);
  const map = suggestedMap(rec, plain, h, at.taken);
  const guessed = plain.filter((f) => map[f] !== undefined);
  const unknown = plain.filter((f) => map[f] === undefined);
  const fixes: string[] = [];
  if (mapped.length > 0) {
    const names = andList(mapped.map((f) => `"${h.map[f]}"`));
    fixes.push(`check the name${mapped.length === 1 ? '' : 's'} ${names} given to --map`);
  }
  if (guessed.length > 0 && unknown.length === 0) {
    fixes.push(`if those columns hold them, pass --map ${mapWord(map)}`);
  } else if (plain.length > 0) {
    const others = [
      ...PAYOUT_FIELDS.filter((f) => map[f] !== undefined).map((f) => `${f}=${map[f]}`),
      ...unknown.map((f) => `${f}="<header>"`),
    ].join(',');
    fixes.push(
      plain.length === 1
        ? `add a "${plain[0]}" column, or name the column to use with --map ${others}`
        : `add ${andList(plain.map((f) => `"${f}"`))} columns, or name the columns to use with --map ${others}`,
    );
  }
  const what =
    missing.length === 1
      ? mapped.length
        ? `the column "${h.map[missing[0]!]}" named by --map is missing`
        : 'column is missing'
      : `columns ${andList([...missing])} are missing`;
  let message = `${what}; the header has ${listHeaders(rec)}: ${fixes.join('; ')}`;
  if (rec.length === 1 && h.singleColumnHint !== undefined) message += h.singleColumnHint;
  const ready = guessed.length > 0 && unknown.length === 0 && mapped.length === 0;
  const field = missing.length === 1 ? missing[0] : undefined;
  h.checker.report(at.location, field, undefined, message, ready ? { map } : {});
}

/**
 * Finds the payout fields in a header row. Reports duplicate and missing columns (and returns
 * undefined: no row can be read then), and warns once about columns that are not read.
 */
export function matchHeader(
  rec: string[],
  location: RowLocation,
  h: HeaderMatching,
): HeaderColumns | undefined {
  const columns = new Map<PayoutField, number[]>();
  const extra: string[] = [];
  let newReference = -1;
  const marked = new Set<number>();
  for (let i = 0; i < rec.length; i++) {
    const mark = DECIMAL_COMMA_MARKED.exec(rec[i]!);
    if (mark) marked.add(i);
    const normalized = normalizeHeader(mark ? mark[1]! : rec[i]!);
    const field = h.names.get(normalized);
    if (field === undefined && normalized === NEW_REFERENCE && newReference === -1) {
      newReference = i;
    } else if (field === undefined) {
      const name = rec[i]!.trim();
      extra.push(name === '' ? `(unnamed column ${i + 1})` : JSON.stringify(name));
    } else {
      const at = columns.get(field);
      if (at) at.push(i);
      else columns.set(field, [i]);
    }
  }
  let bad = false;
  for (const field of PAYOUT_FIELDS) {
    const at = columns.get(field);
    if (at === undefined || at.length < 2) continue;
    bad = true;
    const which = at.map((i) => `${JSON.stringify(rec[i]!.trim())} in column ${i + 1}`);
    h.checker.report(
      location,
      field,
      undefined,
      `appears in more than one column (${which.join(', ')}): keep only one`,
    );
  }
  const missing = REQUIRED_FIELDS.filter((f) => !columns.has(f));
  if (missing.length > 0) {
    const taken = new Set([...columns.values()].flat());
    reportMissing(missing, rec, { location, h, taken });
    return undefined;
  }
  if (bad) return undefined;
  if (extra.length > 0) {
    const description = columns.has('description') ? {} : guessMap(rec, ['description']);
    const offer = description.description
      ? ` (to send ${JSON.stringify(description.description)} as each payout's description, pass --map ${mapWord({ ...h.map, ...description })})`
      : '';
    h.sink.warning(
      `${h.file}: ignoring column${extra.length === 1 ? '' : 's'} ${extra.join(', ')}: ` +
        `only ${PAYOUT_FIELDS.join(', ')} are read${offer}`,
    );
  }
  const amount = columns.get('amount')![0]!;
  if (marked.has(amount)) h.checker.readDecimalComma();
  return {
    reference: columns.get('reference_id')![0]!,
    amount,
    currency: columns.get('currency')![0]!,
    recipient: columns.get('recipient')![0]!,
    description: columns.get('description')?.[0] ?? -1,
    newReference,
  };
}
