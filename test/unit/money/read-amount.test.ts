import { describe, expect, it } from 'vitest';
import { parseAmount, readAmount } from '../../../src/money/amount.js';

/** The regex reader that readAmount's char-code fast path must agree with, kept as it was. */
function reference(
  raw: string,
  digits: number | undefined,
): { text: string; minor: bigint } | string {
  const text = raw.trim();
  const m = /^(\d+)(?:\.(\d+))?$/.exec(text);
  if (!m) return 'refused';
  const intPart = (m[1] ?? '').replace(/^0+(?=\d)/, '');
  const fracPart = m[2] ?? '';
  const canonical = fracPart ? `${intPart}.${fracPart}` : intPart;
  if (intPart === '0' && /^0*$/.test(fracPart)) return 'refused';
  const significant = fracPart.replace(/0+$/, '');
  if (digits !== undefined && significant.length > digits) return 'refused';
  const fits =
    (intPart.length + significant.length <= 15 && (intPart !== '0' || significant.length <= 6)) ||
    String(Number(canonical))
      .replace(/(\.\d*?)0+$/, '$1')
      .replace(/\.$/, '') === canonical.replace(/(\.\d*?)0+$/, '$1').replace(/\.$/, '');
  if (!fits) return 'refused';
  return {
    text: canonical,
    minor: BigInt(intPart + significant.padEnd(digits ?? significant.length, '0')),
  };
}

function outcome(
  raw: string,
  digits: number | undefined,
): { text: string; minor: bigint } | string {
  const r = readAmount(raw, digits);
  return typeof r === 'string' ? 'refused' : r;
}

describe('readAmount', () => {
  it.each([
    ['999999999999999', 0, 999999999999999n],
    ['9999999999999.99', 2, 999999999999999n],
    ['999999999999.999', 3, 999999999999999n],
    ['9999999999999', 2, 999999999999900n],
    ['0.01', 2, 1n],
    ['0.000001', undefined, 1n],
    ['1.10', 2, 110n],
    ['1.1', 3, 1100n],
    ['12', undefined, 12n],
    ['12.500', undefined, 125n],
  ])('reads %s with %s decimals exactly', (text, digits, minor) => {
    expect(readAmount(text, digits)).toEqual({ text, minor });
  });

  it('reads past 15 digits of minor units exactly (the general path)', () => {
    // 16 digits of minor units (15 significant): no longer below 10^15, so BigInt reads them.
    expect(readAmount('12345678901234.5', 2)).toEqual({
      text: '12345678901234.5',
      minor: 1234567890123450n,
    });
    expect(readAmount('9007199254740993', 0)).toBe(
      'has more significant digits than a JSON number carries exactly (15 always fit): check the value',
    );
    expect(readAmount('100000000000000000', 0)).toEqual({
      text: '100000000000000000',
      minor: 100000000000000000n,
    });
  });

  it('keeps the file text as the canonical text, less leading zeros', () => {
    const r = readAmount(' 0012.50 ', 2);
    expect(r).toEqual({ text: '12.50', minor: 1250n });
    expect(readAmount('0.50', 2)).toEqual({ text: '0.50', minor: 50n });
  });

  it('refuses zero, signs, exponents and stray characters with the same messages', () => {
    for (const text of [
      '0',
      '0.0',
      '00',
      '-1',
      '+1',
      '1e3',
      '1.',
      '.5',
      '1..2',
      '1.2.3',
      '1 2',
      '١٢',
    ]) {
      const r = readAmount(text, 2);
      expect(typeof r).toBe('string');
      expect(parseAmount(text, 2)).toEqual({ ok: false, message: r });
    }
    expect(readAmount('0.0000001', undefined)).toMatch(/JSON number carries exactly/);
  });

  it('agrees with the regex reader on generated texts', () => {
    let seed = 12345;
    const rand = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed % n;
    };
    const alphabet = '0000111222333456789..  x-';
    const show = (o: ReturnType<typeof outcome>) =>
      typeof o === 'string' ? o : `${o.text} (${o.minor} minor units)`;
    // Asserted once, on the list of disagreements, so a failure names every one of them.
    const disagreements: string[] = [];
    for (let k = 0; k < 20000; k++) {
      let text = '';
      const len = 1 + rand(20);
      for (let i = 0; i < len; i++) text += alphabet[rand(alphabet.length)];
      for (const digits of [0, 2, 3, 4, undefined]) {
        const got = show(outcome(text, digits));
        const want = show(reference(text, digits));
        if (got !== want)
          disagreements.push(`${JSON.stringify(text)} ${digits}: ${got}, not ${want}`);
      }
    }
    expect(disagreements).toEqual([]);
  });
});
