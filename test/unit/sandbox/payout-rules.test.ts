import { describe, expect, it } from 'vitest';
import { formatMinor } from '../../../src/money/amount.js';
import {
  chargesMinor,
  checkPayout,
  decimalPlaces,
  feeMinor,
  minorToNumber,
  plainDigits,
  toMinorUnits,
} from '../../../src/sandbox/payout-rules.js';

describe('fee rule', () => {
  const fee = (text: string, digits: number) => {
    const minor = toMinorUnits(text, digits);
    if (minor === undefined) throw new Error(`bad amount ${text}`);
    return formatMinor(feeMinor(minor), digits);
  };

  it('is 1% rounded half-up to the minor unit', () => {
    expect(fee('100.00', 2)).toBe('1.00');
    expect(fee('1000', 0)).toBe('10');
    expect(fee('10.000', 3)).toBe('0.100');
    expect(fee('1.50', 2)).toBe('0.02'); // 0.015 -> 0.02
    expect(fee('1.49', 2)).toBe('0.01'); // 0.0149 -> 0.01
    expect(fee('123456789012.34', 2)).toBe('1234567890.12');
  });

  it('is at least one minor unit', () => {
    expect(fee('0.40', 2)).toBe('0.01');
    expect(fee('0.01', 2)).toBe('0.01');
    expect(fee('1', 0)).toBe('1');
  });

  it('charges nothing for failed and canceled payouts', () => {
    expect(chargesMinor('success', 10000n)).toBe(100n);
    expect(chargesMinor('pending', 10000n)).toBe(100n);
    expect(chargesMinor('failed', 10000n)).toBe(0n);
    expect(chargesMinor('canceled', 10000n)).toBe(0n);
  });

  it('turns minor units into the JSON number of the answer', () => {
    expect(minorToNumber(100n, 3)).toBe(0.1);
    expect(minorToNumber(1n, 2)).toBe(0.01);
    expect(minorToNumber(10n, 0)).toBe(10);
  });
});

describe('decimal text', () => {
  it('counts significant decimals, expanding exponents', () => {
    expect(decimalPlaces('10.500')).toBe(1);
    expect(decimalPlaces('10')).toBe(0);
    expect(decimalPlaces('1e2')).toBe(0);
    expect(decimalPlaces('1.25e1')).toBe(1);
    expect(decimalPlaces('1e-7')).toBe(7);
    expect(decimalPlaces('0.1000000000000000001')).toBe(19);
    expect(decimalPlaces('abc')).toBeUndefined();
    expect(decimalPlaces('1e5000')).toBeUndefined();
  });

  it('expands to plain digits', () => {
    expect(plainDigits('0012.3400')).toEqual({ int: '12', frac: '34' });
    expect(plainDigits('5e-3')).toEqual({ int: '0', frac: '005' });
    expect(plainDigits('1.5E+3')).toEqual({ int: '1500', frac: '' });
  });

  it('converts to minor units exactly, refusing extra decimals', () => {
    expect(toMinorUnits('12345678901234567.89', 2)).toBe(1234567890123456789n);
    expect(toMinorUnits('0.1', 3)).toBe(100n);
    expect(toMinorUnits('1.001', 2)).toBeUndefined();
  });
});

describe('checkPayout', () => {
  const good = { amount: 10.5, currency: 'usd', recipient: 'a@b.c', reference_id: 'r1' };

  it('accepts a valid payout and upper-cases the currency', () => {
    const r = checkPayout(good, '10.50');
    expect(r).toEqual({
      ok: true,
      payout: {
        reference_id: 'r1',
        amount: 10.5,
        minor: 1050n,
        digits: 2,
        currency: 'USD',
        recipient: 'a@b.c',
        description: '',
      },
    });
  });

  it('judges decimals on the request text when it is known', () => {
    const r = checkPayout({ ...good, amount: 0.1 }, '0.1000000000000000001');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reasons.join()).toMatch(/19 decimals but USD allows at most 2/);
    // Without the text, String(number) is all there is.
    expect(checkPayout({ ...good, amount: 0.1 }, undefined).ok).toBe(true);
  });

  it('reports every problem at once', () => {
    const r = checkPayout({ amount: '10', currency: 'XYZ', recipient: ' ' }, undefined);
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.reasons).toEqual([
        'reference_id is required: a non-empty string',
        'currency "XYZ" is not an ISO 4217 code',
        'amount must be a JSON number, such as 10.50',
        'recipient is required: a non-empty string',
      ]);
    }
  });

  it('counts description characters as code points', () => {
    const emoji = '😀'.repeat(255); // 510 UTF-16 units, 1020 bytes
    expect(checkPayout({ ...good, description: emoji }, undefined).ok).toBe(true);
    const r = checkPayout({ ...good, description: `${emoji}x` }, undefined);
    expect(r.ok).toBe(false);
    if (!r.ok)
      expect(r.reasons).toEqual(['description is 256 characters long: at most 255 allowed']);
  });

  it('refuses a payout that is not an object', () => {
    expect(checkPayout('r1', undefined)).toEqual({
      ok: false,
      reasons: ['payout must be a JSON object'],
    });
    expect(checkPayout([good], undefined).ok).toBe(false);
  });

  it('refuses amounts that are not above 0 and JPY decimals', () => {
    const zero = checkPayout({ ...good, amount: 0 }, '0');
    expect(zero.ok || zero.reasons).toEqual(['amount must be greater than 0']);
    const jpy = checkPayout({ ...good, currency: 'JPY', amount: 10.5 }, '10.5');
    expect(jpy.ok || jpy.reasons).toEqual(['amount must be a whole number: JPY has no minor unit']);
  });
});
