/**
 * The sandbox's business rules: per-payout validation and the fee rule (the status triggers
 * are in triggers.ts). Money never passes through a float here: amounts become BigInt minor units
 * from their decimal text.
 */
import { formatMinor } from '../money/amount.js';
import { isoMinorUnits } from '../money/currencies.js';

/** The statuses of the interface (part 3). */
export type PayoutStatus = 'success' | 'pending' | 'failed' | 'canceled';

/** Longest description accepted, in characters (Unicode code points). */
export const MAX_DESCRIPTION_CHARS = 255;

/** The message of a payout whose reference_id was already used. */
export const DUPLICATE_MESSAGE = 'Duplicate reference_id: already used';

/** A payout that passed validation, ready to be stored. */
export interface ValidPayout {
  reference_id: string;
  /** The amount as parsed from the request, echoed back as a JSON number. */
  amount: number;
  /** The exact amount in minor units of the currency, from the decimal text. */
  minor: bigint;
  /** The currency's ISO 4217 minor unit. */
  digits: number;
  /** Upper-case ISO 4217 code. */
  currency: string;
  recipient: string;
  /** "" when the request had none. */
  description: string;
}

/** The outcome of validating one payout object. */
export type CheckedPayout = { ok: true; payout: ValidPayout } | { ok: false; reasons: string[] };

const NUMBER_TEXT = /^-?(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/** Exponents beyond this cannot belong to a finite, non-zero amount with a usable text. */
const MAX_EXPONENT = 1000;

/**
 * Splits a JSON number's text into integer and fraction digits with any exponent expanded
 * and insignificant zeros dropped: "1.50" -> {int "1", frac "5"}, "1e2" -> {int "100", frac ""}.
 */
export function plainDigits(text: string): { int: string; frac: string } | undefined {
  const m = NUMBER_TEXT.exec(text.trim());
  if (!m) return undefined;
  const intDigits = m[1] ?? '';
  const digits = intDigits + (m[2] ?? '');
  const exponent = Number.parseInt(m[3] ?? '0', 10);
  if (Math.abs(exponent) > MAX_EXPONENT) return undefined;
  const point = intDigits.length + exponent;
  let int: string;
  let frac: string;
  if (point <= 0) {
    int = '0';
    frac = '0'.repeat(-point) + digits;
  } else if (point >= digits.length) {
    int = digits + '0'.repeat(point - digits.length);
    frac = '';
  } else {
    int = digits.slice(0, point);
    frac = digits.slice(point);
  }
  return { int: int.replace(/^0+(?=\d)/, ''), frac: frac.replace(/0+$/, '') };
}

/** Number of significant decimals of a JSON number's text ("10.500" -> 1), or undefined. */
export function decimalPlaces(text: string): number | undefined {
  return plainDigits(text)?.frac.length;
}

/** Converts a JSON number's text to minor units, or undefined when it has too many decimals. */
export function toMinorUnits(text: string, digits: number): bigint | undefined {
  const p = plainDigits(text);
  if (!p || p.frac.length > digits) return undefined;
  return BigInt(p.int + p.frac.padEnd(digits, '0'));
}

/** The fee: 1% of the amount rounded half-up to the minor unit, and at least one minor unit. */
export function feeMinor(amountMinor: bigint): bigint {
  const fee = (amountMinor + 50n) / 100n;
  return fee < 1n ? 1n : fee;
}

/** The charges of a payout in minor units: the fee for success and pending, 0 otherwise. */
export function chargesMinor(status: PayoutStatus, amountMinor: bigint): bigint {
  return status === 'success' || status === 'pending' ? feeMinor(amountMinor) : 0n;
}

/** Minor units as the JSON number the API answers with: (100n, 3) -> 0.1. */
export function minorToNumber(minor: bigint, digits: number): number {
  // The decimal text has at most the currency's digits; its double is the shortest round trip.
  return Number(formatMinor(minor, digits));
}

/** Whether a value is a non-empty string (blank counts as empty). */
function filled(value: unknown): value is string {
  return typeof value === 'string' && value.trim() !== '';
}

/** The reference_id of a payout object when it is a usable one, else undefined. */
export function referenceOf(item: unknown): string | undefined {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) return undefined;
  const ref = (item as Record<string, unknown>).reference_id;
  return filled(ref) ? ref : undefined;
}

/** An ISO 4217 currency of a payout, with its minor-unit digits. */
interface Currency {
  code: string;
  digits: number;
}

/** Checks the currency code, pushing a reason when it is missing or not ISO 4217. */
function checkCurrency(value: unknown, reasons: string[]): Currency | undefined {
  if (typeof value !== 'string' || value.trim() === '') {
    reasons.push('currency is required: an ISO 4217 code such as USD');
    return undefined;
  }
  const code = value.toUpperCase();
  const digits = isoMinorUnits(code);
  if (digits === undefined) {
    reasons.push(`currency ${JSON.stringify(value)} is not an ISO 4217 code`);
    return undefined;
  }
  return { code, digits };
}

/** Checks the amount against the currency's minor unit, pushing reasons when it fails. */
function checkAmount(
  value: unknown,
  text: string | undefined,
  currency: Currency | undefined,
  reasons: string[],
): bigint | undefined {
  if (typeof value !== 'number') {
    reasons.push('amount must be a JSON number, such as 10.50');
    return undefined;
  }
  if (!Number.isFinite(value)) {
    reasons.push('amount is too large');
    return undefined;
  }
  if (!(value > 0)) {
    reasons.push('amount must be greater than 0');
    return undefined;
  }
  if (currency === undefined) return undefined;
  const { code, digits } = currency;
  // The request's own digits when known: String(value) would hide decimals a double drops.
  const source = text ?? String(value);
  const places = decimalPlaces(source);
  if (places === undefined) {
    reasons.push('amount is out of range');
    return undefined;
  }
  if (places > digits) {
    reasons.push(
      digits === 0
        ? `amount must be a whole number: ${code} has no minor unit`
        : `amount has ${places} decimals but ${code} allows at most ${digits}`,
    );
    return undefined;
  }
  return toMinorUnits(source, digits);
}

/**
 * Validates one element of `payouts`. `amountText` is the amount's text in the request
 * body when it could be recovered. Every problem found is reported, not only the first.
 */
export function checkPayout(item: unknown, amountText: string | undefined): CheckedPayout {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) {
    return { ok: false, reasons: ['payout must be a JSON object'] };
  }
  const p = item as Record<string, unknown>;
  const reasons: string[] = [];
  if (!filled(p.reference_id)) reasons.push('reference_id is required: a non-empty string');

  const currency = checkCurrency(p.currency, reasons);
  const minor = checkAmount(p.amount, amountText, currency, reasons);

  if (!filled(p.recipient)) reasons.push('recipient is required: a non-empty string');

  let description = '';
  // A null description is refused with the whole request (handlers/create.ts).
  if (p.description !== undefined && p.description !== null) {
    if (typeof p.description !== 'string') {
      reasons.push('description must be a string');
    } else {
      const chars = [...p.description].length;
      if (chars > MAX_DESCRIPTION_CHARS) {
        reasons.push(
          `description is ${chars} characters long: at most ${MAX_DESCRIPTION_CHARS} allowed`,
        );
      }
      description = p.description;
    }
  }
  if (reasons.length > 0 || minor === undefined || currency === undefined) {
    return { ok: false, reasons: reasons.length > 0 ? reasons : ['amount is invalid'] };
  }
  return {
    ok: true,
    payout: {
      reference_id: p.reference_id as string,
      amount: p.amount as number,
      minor,
      digits: currency.digits,
      currency: currency.code,
      recipient: p.recipient as string,
      description,
    },
  };
}
