import { Chalk } from 'chalk';
import { describe, expect, it } from 'vitest';
import { closingLine } from '../../../src/core/send/render.js';
import { groupThousands } from '../../../src/money/amount.js';

describe('groupThousands', () => {
  it.each([
    ['1007965.07', '1,007,965.07'],
    ['579071.29', '579,071.29'],
    ['1000', '1,000'],
    ['999.999', '999.999'],
    ['0.10', '0.10'],
    ['12345678901234', '12,345,678,901,234'],
    ['-1234.5', '-1,234.5'],
  ])('%s -> %s, digits unchanged', (plain, grouped) => {
    expect(groupThousands(plain)).toBe(grouped);
    expect(groupThousands(plain).replaceAll(',', '')).toBe(plain);
  });

  it('leaves text that is not a plain decimal alone', () => {
    expect(groupThousands('n/a')).toBe('n/a');
  });
});

describe('closing line', () => {
  const summary = {
    total: 2,
    counts: {
      success: 2,
      failed: 0,
      pending: 0,
      unknown: 0,
      notSent: 0,
      sentEarlier: 0,
      foundAtService: 0,
      canceled: 0,
      paidByRetry: 0,
    },
    charges: { EUR: '12345.60' },
    chargesUnknown: 0,
  };
  it('groups charges for people, on a terminal and a pipe alike', () => {
    const c = new Chalk({ level: 0 });
    expect(closingLine(summary, c)).toContain('charges EUR 12,345.60');
  });
});
