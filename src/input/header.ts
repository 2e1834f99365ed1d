/** Matching a header row to the payout fields, shared by the CSV and .xlsx readers. */
import type { PayoutChecker, RowLocation } from './fields.js';
import { normalizeHeader } from './options.js';
import { type IntakeSink, PAYOUT_FIELDS, type PayoutField, REQUIRED_FIELDS } from './types.js';

const LISTED_HEADERS = 12;

/** Which column (0-based) holds each field; description is -1 when there is none. */
export interface HeaderColumns {
  reference: number;
  amount: number;
  currency: number;
  recipient: number;
  description: number;
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
  for (let i = 0; i < rec.length; i++) {
    const field = h.names.get(normalizeHeader(rec[i]!));
    if (field === undefined) {
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
  for (const field of REQUIRED_FIELDS) {
    if (columns.has(field)) continue;
    bad = true;
    const mapped = h.map[field];
    let message =
      mapped === undefined
        ? `column is missing; the header has ${listHeaders(rec)}: add a "${field}" column, or name the column to use with --map ${field}="<header>"`
        : `the column "${mapped}" named by --map is missing; the header has ${listHeaders(rec)}: check the name given to --map`;
    if (rec.length === 1 && h.singleColumnHint !== undefined) message += h.singleColumnHint;
    h.checker.report(location, field, undefined, message);
  }
  if (bad) return undefined;
  if (extra.length > 0) {
    h.sink.warning(
      `${h.file}: ignoring column${extra.length === 1 ? '' : 's'} ${extra.join(', ')}: ` +
        `only ${PAYOUT_FIELDS.join(', ')} are read`,
    );
  }
  return {
    reference: columns.get('reference_id')![0]!,
    amount: columns.get('amount')![0]!,
    currency: columns.get('currency')![0]!,
    recipient: columns.get('recipient')![0]!,
    description: columns.get('description')?.[0] ?? -1,
  };
}
