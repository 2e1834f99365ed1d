/**
 * The one guard of the CSV files payouts writes for spreadsheets (--report, --failed-out) and
 * its undoing when they are read back. A cell a spreadsheet would run as a formula (one that
 * starts with = + - @, tab or carriage return, as OWASP lists them) gets a single quote in
 * front, which a spreadsheet shows as text; so does a cell that starts with a quote itself, so
 * that reading removes exactly one quote from a guarded cell and every value reads back as it
 * was written: `'=x` is written `''=x`, `+49…` is written `'+49…`, `'Tis` is written `''Tis`.
 */

/** How a cell starts that the guard quotes. */
const GUARDED = /^[=+\-@\t\r']/;

/** A cell made safe for a spreadsheet: a `'` in front when it starts as GUARDED says. */
export function guardFormula(value: string): string {
  return GUARDED.test(value) ? `'${value}` : value;
}

/** The value a guarded cell holds: its first `'` removed when what follows needed the guard. */
export function unguardFormula(cell: string): string {
  return cell.startsWith("'") && GUARDED.test(cell.slice(1)) ? cell.slice(1) : cell;
}
