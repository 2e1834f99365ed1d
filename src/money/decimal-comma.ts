/**
 * Amounts written with a decimal comma (`1.234,56`), as German, French or Spanish Excel
 * writes them. They are rewritten as text into the canonical form (`1234.56`) that
 * `readAmount` reads: one amount parser, and never a float.
 */

/** The outcome of rewriting a decimal-comma amount. */
export type CommaResult = { ok: true; text: string } | { ok: false; message: string };

/** Digits, with dots only between groups of three, then optionally a comma and digits. */
const COMMA_DECIMAL = /^(\d{1,3}(?:\.\d{3})+|\d+)(?:,(\d+))?$/;
/** Texts made only of what a decimal-comma amount is made of. */
const COMMA_CHARACTERS = /^[\d.,]+$/;
const EXAMPLE = 'such as 1.234.567,89';

/**
 * Rewrites `1.234,56` as `1234.56` (dots separate thousands, in groups of three; a comma
 * separates the decimals). A text that holds something besides digits, dots and commas
 * (a sign, a symbol, or nothing) comes back unchanged for `readAmount` to explain.
 */
export function decimalCommaToPoint(raw: string): CommaResult {
  const text = raw.trim();
  const m = COMMA_DECIMAL.exec(text);
  if (m) {
    const int = m[1]!.replaceAll('.', '');
    return { ok: true, text: m[2] === undefined ? int : `${int}.${m[2]}` };
  }
  if (!COMMA_CHARACTERS.test(text)) return { ok: true, text };
  return { ok: false, message: explainRefused(text) };
}

/** Why a text of digits, dots and commas is not a decimal-comma amount. */
function explainRefused(text: string): string {
  const comma = text.indexOf(',');
  if (comma !== text.lastIndexOf(',')) {
    return `has more than one comma: with --decimal-comma, write one decimal comma and dots only between thousands, ${EXAMPLE}`;
  }
  if (comma !== -1 && text.indexOf('.', comma) !== -1) {
    return `has a "." after the decimal comma: with --decimal-comma, "." only separates thousands, ${EXAMPLE}`;
  }
  const int = comma === -1 ? text : text.slice(0, comma);
  if (int === '') return `write a digit before the comma, such as 0${text}`;
  if (comma === text.length - 1) return `write digits after the comma or none, such as ${int}`;
  const groups = int.split('.');
  const first = groups[0]!;
  if (first === '') return `write a digit before the ".", ${EXAMPLE}`;
  if (first.length > 3) {
    return `has ${first.length} digits before the first ".": with --decimal-comma, "." separates thousands, in groups of three, ${EXAMPLE}`;
  }
  const bad = groups.findIndex((g, i) => i > 0 && g.length !== 3);
  const group = groups[bad] ?? '';
  return `has a group of ${group.length} digit${group.length === 1 ? '' : 's'} after a "." ("${groups.slice(0, bad + 1).join('.')}"): with --decimal-comma, "." separates thousands, in groups of three, ${EXAMPLE}: check the amount, and write its decimals after a comma`;
}

/** One comma with three digits after it: thousands or decimals, the text cannot tell. */
const AMBIGUOUS_COMMA = /^\d{1,3},\d{3}$/;

/**
 * For an amount refused as a plain decimal: the message that names --decimal-comma when
 * the text has a comma and the flag would read it, else undefined.
 */
export function decimalCommaHint(raw: string): string | undefined {
  const text = raw.trim();
  if (!text.includes(',')) return undefined;
  const read = decimalCommaToPoint(text);
  if (!read.ok || read.text === text) return undefined;
  if (AMBIGUOUS_COMMA.test(text)) {
    return `has a comma that may separate thousands or decimals: if thousands, write ${text.replace(',', '')}; if it is a decimal comma, pass --decimal-comma (or write ${read.text})`;
  }
  return `looks like a decimal comma: pass --decimal-comma (or write ${read.text})`;
}
