import { describe, expect, it } from 'vitest';
import { decimalCommaHint, decimalCommaToPoint } from '../../../src/money/decimal-comma.js';

// The money function lives in src/money; its cases are here beside the intake that calls it.

describe('decimalCommaToPoint', () => {
  it.each([
    ['1234,56', '1234.56'],
    ['1.234,56', '1234.56'],
    ['1.234.567,89', '1234567.89'],
    [' 12,50 ', '12.50'],
    ['0,10', '0.10'],
    ['1.000', '1000'],
    ['48000', '48000'],
    ['123.456.789', '123456789'],
  ])('rewrites %s as %s', (text, point) => {
    expect(decimalCommaToPoint(text)).toEqual({ ok: true, text: point });
  });

  it.each([
    ['1.23,45', 'has a group of 2 digits after a "." ("1.23")'],
    ['12.34', 'has a group of 2 digits after a "." ("12.34")'],
    ['1.2345,6', 'has a group of 4 digits after a "." ("1.2345")'],
    ['1234.567,89', 'has 4 digits before the first "."'],
    ['1,234,56', 'has more than one comma'],
    ['1,234.56', 'has a "." after the decimal comma'],
    [',5', 'write a digit before the comma, such as 0,5'],
    ['12,', 'write digits after the comma or none, such as 12'],
    ['.5', 'write a digit before the "."'],
  ])('refuses %s: %s', (text, why) => {
    const r = decimalCommaToPoint(text);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message.startsWith(why), r.message).toBe(true);
  });

  it('hands texts with other characters to the amount parser unchanged', () => {
    for (const text of ['€12,50', '-1,5', '1e3', '', 'abc']) {
      expect(decimalCommaToPoint(text)).toEqual({ ok: true, text: text.trim() });
    }
  });
});

describe('decimalCommaHint', () => {
  it('names --decimal-comma only for texts with a comma that the flag would read', () => {
    expect(decimalCommaHint('1.234,56')).toBe(
      'looks like a decimal comma: pass --decimal-comma (or write 1234.56)',
    );
    expect(decimalCommaHint('1234,56')).toBe(
      'looks like a decimal comma: pass --decimal-comma (or write 1234.56)',
    );
    expect(decimalCommaHint('12,500')).toBe(
      'has a comma that may separate thousands or decimals: if thousands, write 12500; if it is a decimal comma, pass --decimal-comma (or write 12.500)',
    );
    for (const text of ['1,234.56', '1.234.567', '1,2,3', '$1,50', '12.50']) {
      expect(decimalCommaHint(text), text).toBeUndefined();
    }
  });
});
