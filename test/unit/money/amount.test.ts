import { describe, expect, it } from 'vitest';
import {
  CurrencyTotals,
  formatMinor,
  minorFromServiceNumber,
  parseAmount,
} from '../../../src/money/amount.js';
import { CurrencyTable, isoMinorUnits } from '../../../src/money/currencies.js';

describe('parseAmount', () => {
  it.each([
    ['1234.56', 2, '1234.56', 123456n],
    ['0.10', 2, '0.10', 10n],
    ['007.5', 2, '7.5', 750n],
    ['48000', 0, '48000', 48000n],
    ['125.500', 3, '125.500', 125500n],
    ['10.50', 0, undefined, undefined],
    [' 99.99 ', 2, '99.99', 9999n],
    ['1.5000', 2, '1.5000', 150n],
  ])('%s with %i decimals', (text, digits, canonical, minor) => {
    const r = parseAmount(text, digits);
    if (canonical === undefined) {
      expect(r.ok).toBe(false);
    } else {
      expect(r).toEqual({ ok: true, amount: { text: canonical, minor } });
    }
  });

  it.each([
    ['1,234.56', /thousands separators/],
    ['1234,56', /"\." as the decimal separator/],
    ['$12.00', /currency symbol/],
    ['12.00 EUR', /currency symbol/],
    ['-5', /greater than 0/],
    ['+5', /remove the sign/],
    ['1e3', /without an exponent/],
    ['0', /greater than 0/],
    ['0.00', /greater than 0/],
    ['', /is empty/],
    ['.5', /digit before the point/],
    ['abc', /plain decimal/],
    ['12345678901234567', /JSON number carries exactly/],
  ])('refuses %s', (text, why) => {
    const r = parseAmount(text, 2);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toMatch(why);
  });

  it('refuses more decimals than the minor unit, naming it', () => {
    const r = parseAmount('10.005', 2);
    expect(r).toEqual({
      ok: false,
      message: 'this currency allows at most 2 decimals: round the amount to 2 decimals',
    });
    expect(parseAmount('100.5', 0)).toEqual({
      ok: false,
      message: 'this currency has no minor unit: use a whole number',
    });
  });
});

describe('money helpers', () => {
  it('formats minor units exactly', () => {
    expect(formatMinor(123450n, 2)).toBe('1234.50');
    expect(formatMinor(5n, 3)).toBe('0.005');
    expect(formatMinor(48000n, 0)).toBe('48000');
  });

  it('sums totals in BigInt, where floats would drift', () => {
    const t = new CurrencyTotals();
    for (let i = 0; i < 10; i++) t.add('USD', 10n); // 0.10 ten times
    t.add('EUR', 1n);
    expect(formatMinor(t.minorOf('USD'), 2)).toBe('1.00');
    expect(t.entries().map((e) => e.currency)).toEqual(['EUR', 'USD']);
  });

  it('reads service numbers into minor units', () => {
    expect(minorFromServiceNumber(0.11, 2)).toBe(11n);
    expect(minorFromServiceNumber(1e-7, 7)).toBe(1n);
    expect(minorFromServiceNumber(0.105, 2)).toBeUndefined();
  });

  it('takes minor units from ISO 4217, not Intl', () => {
    expect(isoMinorUnits('JPY')).toBe(0);
    expect(isoMinorUnits('USD')).toBe(2);
    expect(isoMinorUnits('BHD')).toBe(3);
    expect(isoMinorUnits('IQD')).toBe(3);
    expect(isoMinorUnits('CLF')).toBe(4);
    expect(isoMinorUnits('XAU')).toBeUndefined();
    expect(new CurrencyTable([['XTS', 0]]).minorUnits('XTS')).toBe(0);
  });
});
