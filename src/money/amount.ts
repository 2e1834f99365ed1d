/**
 * Exact decimal money. Amounts live as their canonical decimal text (what goes into the
 * request body) and as BigInt minor units (for sums and limits). No float ever holds one.
 */

/** A validated amount: its canonical text and its value in minor units of its currency. */
export interface Amount {
  /** Canonical decimal text, as written in the file less leading zeros, e.g. "1234.50". */
  text: string;
  /** Value in minor units of the currency (1234.50 USD -> 123450n). */
  minor: bigint;
}

/** The outcome of reading an amount's text. */
export type AmountResult = { ok: true; amount: Amount } | { ok: false; message: string };

const PLAIN_DECIMAL = /^(\d+)(?:\.(\d+))?$/;
const CURRENCY_SYMBOLS = /[$€£¥₹₽₩₺₪₫₱₦₴฿¢]/u;
const ALL_ZEROS = /^0*$/;
const NOT_POSITIVE = 'must be greater than 0: correct the amount, or remove the payout';

/** Explains why a text is not a plain decimal, naming the fix. */
function explainNotPlain(text: string): string {
  if (text === '') return 'is empty: write the amount, such as 1234.56';
  if (/^-/.test(text)) return NOT_POSITIVE;
  if (/^\+/.test(text)) return 'remove the sign: write a plain decimal such as 1234.56';
  if (CURRENCY_SYMBOLS.test(text) || /^[A-Za-z]{3}\s*\d|\d\s*[A-Za-z]{3}$/.test(text)) {
    return 'remove the currency symbol: write a plain decimal such as 1234.56';
  }
  if (/^\d*\.?\d+[eE][+-]?\d+$/.test(text)) {
    return 'write the number out in full, without an exponent, such as 1234.56';
  }
  if (/^\d{1,3}([,' ]\d{3})+(\.\d+)?$/.test(text) || /^\d{1,3}(\.\d{3})+(,\d+)?$/.test(text)) {
    return 'remove the thousands separators: use a plain decimal such as 1234.56';
  }
  if (/^\d+,\d+$/.test(text)) return 'use "." as the decimal separator, such as 1234.56';
  if (/^\.\d+$/.test(text)) return `write a digit before the point, such as 0${text}`;
  if (/^\d+\.$/.test(text))
    return `write digits after the point or none, such as ${text.slice(0, -1)}`;
  return 'use a plain decimal such as 1234.56';
}

/** Whether a canonical decimal survives a round trip through an IEEE 754 double. */
function fitsJsonNumberExactly(canonical: string): boolean {
  // A receiver parses a JSON number into a double; the decimal is carried exactly only
  // when the double's shortest representation gives back the same decimal.
  const asDouble = Number(canonical);
  if (!Number.isFinite(asDouble)) return false;
  return trimFraction(String(asDouble)) === trimFraction(canonical);
}

/** Drops trailing fraction zeros and a bare point, for comparing decimal values. */
function trimFraction(text: string): string {
  if (!text.includes('.')) return text;
  return text.replace(/0+$/, '').replace(/\.$/, '');
}

/** 10^0 .. 10^15, each exact in a double. */
const POW10 = [1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15];
/** Digits of minor units that always fit a double exactly: 10^15 - 1 < 2^53. */
const EXACT_DIGITS = 15;

/**
 * The common case of readAmount, by char code, with no regex, no string building and no
 * BigInt parse: a plain decimal with no leading zero whose minor units have at most 15
 * digits. Such a count is below 2^53, so the number arithmetic here is exact (digits are
 * accumulated as an integer and scaled by an exact power of ten: never a binary fraction).
 * Undefined for anything else, which the general path then reads or explains.
 */
function readPlainAmount(text: string, digits: number | undefined): Amount | undefined {
  const n = text.length;
  let i = 0;
  let value = 0;
  if (n === 0) return undefined;
  // A leading zero needs canonicalising ("007.5"): left to the general path; "0.5" is not one.
  if (text.charCodeAt(0) === 48 && n > 1 && text.charCodeAt(1) !== 46) return undefined;
  for (; i < n; i++) {
    const d = text.charCodeAt(i) - 48;
    if (d < 0 || d > 9) break;
    value = value * 10 + d;
  }
  const intLength = i;
  if (intLength === 0 || intLength > EXACT_DIGITS) return undefined;
  let significant = 0;
  if (i < n) {
    if (text.charCodeAt(i) !== 46) return undefined;
    const fracStart = ++i;
    if (i === n) return undefined;
    // Trailing zeros of the fraction add nothing to the value: find where they start.
    let end = n;
    while (end > fracStart && text.charCodeAt(end - 1) === 48) end--;
    for (; i < n; i++) {
      const d = text.charCodeAt(i) - 48;
      if (d < 0 || d > 9) return undefined;
      if (i < end) value = value * 10 + d;
    }
    significant = end - fracStart;
  }
  // Zero is refused, and below 1e-6 the general path checks the JSON round trip.
  if (value === 0 || (intLength === 1 && text.charCodeAt(0) === 48 && significant > 6)) {
    return undefined;
  }
  const scale = digits ?? significant;
  // More decimals than the currency has is refused with a message by the general path.
  if (significant > scale || intLength + scale > EXACT_DIGITS) return undefined;
  // value < 10^15 and the product below 10^15 too: both exact integers in a double.
  return { text, minor: BigInt(value * POW10[scale - significant]!) };
}

/**
 * Reads an amount's text: the amount, or the message saying why it is refused. `digits` is
 * the currency's minor unit, or undefined when the currency is unknown (then only the syntax
 * and sign are checked). Runs once per row: it allocates no result wrapper.
 */
export function readAmount(raw: string, digits: number | undefined): Amount | string {
  const text = raw.trim();
  return readPlainAmount(text, digits) ?? readGeneralAmount(text, digits);
}

/** readAmount for any text: canonicalises, checks the minor unit and the JSON round trip. */
function readGeneralAmount(text: string, digits: number | undefined): Amount | string {
  const m = PLAIN_DECIMAL.exec(text);
  if (!m) return explainNotPlain(text);
  const rawInt = m[1] ?? '';
  const intPart = rawInt.charCodeAt(0) === 48 ? rawInt.replace(/^0+(?=\d)/, '') : rawInt;
  const fracPart = m[2] ?? '';
  const canonical = fracPart ? `${intPart}.${fracPart}` : intPart;
  if (intPart === '0' && ALL_ZEROS.test(fracPart)) return NOT_POSITIVE;
  const significantFrac =
    fracPart.charCodeAt(fracPart.length - 1) === 48 ? fracPart.replace(/0+$/, '') : fracPart;
  if (digits !== undefined && significantFrac.length > digits) {
    return digits === 0
      ? 'this currency has no minor unit: use a whole number'
      : `this currency allows at most ${digits} decimal${digits === 1 ? '' : 's'}: round the amount to ${digits} decimal${digits === 1 ? '' : 's'}`;
  }
  // Up to 15 significant digits always survive a double (DBL_DIG), so the round trip is
  // skipped for them; below 1e-6 it still runs, since String(number) writes an exponent there.
  const surelyFits =
    intPart.length + significantFrac.length <= 15 &&
    (intPart !== '0' || significantFrac.length <= 6);
  if (!surelyFits && !fitsJsonNumberExactly(canonical)) {
    return 'has more significant digits than a JSON number carries exactly (15 always fit): check the value';
  }
  const scale = digits ?? significantFrac.length;
  const minor = BigInt(intPart + significantFrac.padEnd(scale, '0'));
  return { text: canonical, minor };
}

/**
 * Reads an amount's text. `digits` is the currency's minor unit, or undefined when the
 * currency is unknown (then only the syntax and sign are checked).
 */
export function parseAmount(raw: string, digits: number | undefined): AmountResult {
  const r = readAmount(raw, digits);
  return typeof r === 'string' ? { ok: false, message: r } : { ok: true, amount: r };
}

/** Formats minor units as a decimal with exactly `digits` decimals: (123450n, 2) -> "1234.50". */
export function formatMinor(minor: bigint, digits: number): string {
  const negative = minor < 0n;
  const abs = (negative ? -minor : minor).toString().padStart(digits + 1, '0');
  const int = abs.slice(0, abs.length - digits);
  const frac = digits > 0 ? `.${abs.slice(abs.length - digits)}` : '';
  return `${negative ? '-' : ''}${int}${frac}`;
}

/**
 * Converts a number the service sent back (amount, charges) to minor units. The service's
 * JSON number was parsed into a double; its shortest decimal form is the service's text.
 */
export function minorFromServiceNumber(value: number, digits: number): bigint | undefined {
  if (!Number.isFinite(value)) return undefined;
  return parseAmountLoose(String(value), digits);
}

/** Writes a decimal text's exponent out (1e-7 -> 0.0000001, 1.5e21 -> 1500000000000000000000). */
function expandExponent(text: string): string {
  if (!/e/i.test(text)) return text;
  // Number#toString uses exponents below 1e-6 and above 1e21: expand them exactly.
  const [mant = '', expText = '0'] = text.toLowerCase().split('e');
  const exp = Number.parseInt(expText, 10);
  const sign = mant.startsWith('-') ? '-' : '';
  const [i = '', f = ''] = mant.replace(/^[-+]/, '').split('.');
  const digitsAll = i + f;
  const point = i.length + exp;
  if (point <= 0) return `${sign}0.${'0'.repeat(-point)}${digitsAll}`;
  if (point >= digitsAll.length) return sign + digitsAll + '0'.repeat(point - digitsAll.length);
  return `${sign}${digitsAll.slice(0, point)}.${digitsAll.slice(point)}`;
}

/**
 * The shortest decimal that reads back as this double, with no exponent: what a spreadsheet
 * shows for a number it stores (0.1 -> "0.1", 1e-7 -> "0.0000001"). Undefined for NaN and infinities.
 */
export function plainNumberText(value: number): string | undefined {
  return Number.isFinite(value) ? expandExponent(String(value)) : undefined;
}

/** Reads a non-negative decimal text (possibly with an exponent from String(number)) into minor units. */
function parseAmountLoose(text: string, digits: number): bigint | undefined {
  const t = expandExponent(text);
  const m = /^(-?)(\d+)(?:\.(\d+))?$/.exec(t);
  if (!m) return undefined;
  const frac = (m[3] ?? '').replace(/0+$/, '');
  if (frac.length > digits) return undefined;
  const minor = BigInt((m[2] ?? '0') + frac.padEnd(digits, '0'));
  return m[1] === '-' ? -minor : minor;
}

/**
 * Whether our amount text and a number the service sent are the same decimal value, compared
 * digit for digit (the service's double is read as its shortest decimal form, as it wrote it).
 */
export function sameDecimal(text: string, value: number | string): boolean {
  if (typeof value === 'number' && !Number.isFinite(value)) return false;
  const ours = parseAmountLoose(text.trim(), 40);
  return ours !== undefined && ours === parseAmountLoose(String(value).trim(), 40);
}

/**
 * Writes a number the service sent (amount, charges) with the currency's decimals, exactly:
 * 12.5 with 2 digits -> "12.50". Falls back to the service's own text when it does not fit.
 */
export function formatServiceNumber(value: number, digits: number | undefined): string {
  const minor = digits === undefined ? undefined : minorFromServiceNumber(value, digits);
  return minor === undefined || digits === undefined ? String(value) : formatMinor(minor, digits);
}

/**
 * An amount the service sent as a number (charges), as every table and document writes it:
 * in the currency's decimals (1 USD -> "1.00"), else the service's digits, never with an
 * exponent (1e-7 -> "0.0000001").
 */
export function formatServiceAmount(value: number, digits: number | undefined): string {
  const text = formatServiceNumber(value, digits);
  return /e/i.test(text) ? (plainNumberText(value) ?? text) : text;
}

/**
 * A decimal text with its whole part grouped by thousands, for people:
 * "1007965.07" -> "1,007,965.07". The digits are unchanged; files, --json and the tables on
 * a pipe keep them plain.
 */
export function groupThousands(text: string): string {
  const m = /^(-?)(\d+)(\.\d+)?$/.exec(text);
  if (!m) return text;
  return `${m[1]}${m[2]!.replace(/\B(?=(\d{3})+$)/g, ',')}${m[3] ?? ''}`;
}

/** Running per-currency totals of minor units, in first-seen order. */
export class CurrencyTotals {
  private readonly totals = new Map<string, { count: number; minor: bigint }>();

  /** Adds one amount to its currency's total. */
  add(currency: string, minor: bigint): void {
    const t = this.totals.get(currency);
    if (t) {
      t.count += 1;
      t.minor += minor;
    } else {
      this.totals.set(currency, { count: 1, minor });
    }
  }

  /** The totals as [currency, count, minor units], sorted by currency code. */
  entries(): Array<{ currency: string; count: number; minor: bigint }> {
    return [...this.totals.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([currency, t]) => ({ currency, count: t.count, minor: t.minor }));
  }

  /** Total minor units of one currency (0n when none). */
  minorOf(currency: string): bigint {
    return this.totals.get(currency)?.minor ?? 0n;
  }

  /** Number of amounts added, over every currency. */
  get count(): number {
    let n = 0;
    for (const t of this.totals.values()) n += t.count;
    return n;
  }

  /** These totals less others' (parts of them): currencies left with no amount drop out. */
  without(...parts: CurrencyTotals[]): CurrencyTotals {
    const out = new CurrencyTotals();
    for (const [currency, t] of this.totals) {
      let { count, minor } = t;
      for (const p of parts) {
        const q = p.totals.get(currency);
        if (q) {
          count -= q.count;
          minor -= q.minor;
        }
      }
      if (count > 0) out.totals.set(currency, { count, minor });
    }
    return out;
  }
}

/**
 * Money as people read it, in every summary, question, table and closing line, on a terminal
 * and a pipe alike: the code first, thousands grouped, "EUR 75,711.26" (docs/output.md).
 * `grouped: false` keeps the digits plain, for the rows a program reads (a table on a pipe).
 */
export function moneyText(currency: string, decimal: string, grouped = true): string {
  return `${currency} ${grouped ? groupThousands(decimal) : decimal}`.trim();
}
