import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { planRun } from '../../../src/core/send/plan.js';
import type { HashedSource } from '../../../src/core/send/sources.js';
import { formatProblem, InputError } from '../../../src/errors.js';
import { CurrencyTable } from '../../../src/money/currencies.js';

const HEADER = 'reference_id,amount,currency,recipient';

/** An in-memory CSV file of a run: a header and one payout per reference. */
function csvFile(name: string, refs: string[]): HashedSource {
  const text = `${HEADER}\n${refs.map((r) => `${r},1.00,EUR,a@example.com`).join('\n')}\n`;
  return { name, open: () => Readable.from([Buffer.from(text)]), digest: () => '' };
}

/** Plans a run of `sources`, returning the warnings and, when it was refused, its problems. */
async function plan(sources: HashedSource[], withHashes = false) {
  const warnings: string[] = [];
  const currencies = new CurrencyTable();
  try {
    const p = await planRun(sources, {
      intake: { currencies },
      currencies,
      chunkSize: 100,
      maxTotals: [],
      warn: (m) => warnings.push(m),
      withHashes,
    });
    return { warnings, problems: undefined, payoutCount: p.payoutCount };
  } catch (err) {
    if (!(err instanceof InputError)) throw err;
    return { warnings, problems: err.problems.map(formatProblem), payoutCount: 0 };
  }
}

describe('planRun: references used twice', () => {
  for (const withHashes of [false, true]) {
    it(`names both lines of a repeat in one file (${withHashes ? 'send' : 'dry run'})`, async () => {
      const r = await plan(
        [csvFile('payouts.csv', ['DE-1', 'DE-2', 'DE-3', 'DE-3', 'DE-2', 'DE-3'])],
        withHashes,
      );
      expect(r.problems).toEqual([
        'payouts.csv line 5: reference_id "DE-3": is used on lines 4 and 5: each payout needs its own reference_id',
        'payouts.csv line 6: reference_id "DE-2": is used on lines 3 and 6: each payout needs its own reference_id',
        'payouts.csv line 7: reference_id "DE-3": is used on lines 4 and 7: each payout needs its own reference_id',
      ]);
    });
  }

  it('names both files of a repeat across files', async () => {
    const r = await plan([csvFile('a.csv', ['A-1', 'X-1']), csvFile('b.csv', ['B-1', 'X-1'])]);
    expect(r.problems).toEqual([
      'b.csv line 3: reference_id "X-1": is used on a.csv line 3 and b.csv line 3: each payout needs its own reference_id',
    ]);
  });

  it('refuses "." and a control character in the same run as everything else', async () => {
    const r = await plan([csvFile('p.csv', ['.', 'ok', '"a\tb"', '..'])]);
    expect(r.problems).toHaveLength(3);
    expect(r.problems?.[0]).toMatch(/^p\.csv line 2: reference_id "\.": means this folder/);
    expect(r.problems?.[1]).toMatch(/^p\.csv line 4: reference_id "a\\tb": holds the control/);
    expect(r.problems?.[2]).toMatch(/^p\.csv line 5: reference_id "\.\.": means the parent/);
  });
});
