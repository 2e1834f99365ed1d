import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { LookalikeReferences } from '../../../src/input/lookalikes.js';
import { planRun } from '../../../src/core/send/plan.js';
import type { HashedSource } from '../../../src/core/send/plan.js';
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
      warn: (m) => warnings.push(m),
      withHashes,
    });
    return { warnings, problems: undefined, payoutCount: p.payoutCount };
  } catch (err) {
    if (!(err instanceof InputError)) throw err;
    return { warnings, problems: err.problems.map(formatProblem), payoutCount: 0 };
  }
}

const SAME = 'they differ only by invisible characters or Unicode normalisation';

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

describe('planRun: references that look the same', () => {
  it('warns when a later reference differs from an ASCII one only by a zero-width space', async () => {
    const refs = ['DE-1', 'DE-2', 'DE-3', 'DE-4', 'DE-5', 'DE\u200B-3'];
    const r = await plan([csvFile('payouts.csv', refs)]);
    expect(r.problems).toBeUndefined();
    expect(r.payoutCount).toBe(6);
    expect(r.warnings).toEqual([
      `payouts.csv line 7: reference_id "DE\\u200b-3" looks the same as line 4's "DE-3" (${SAME}); check that these are two different payouts`,
    ]);
  });

  it('warns when the ASCII reference comes after the invisible-character one', async () => {
    const r = await plan([csvFile('payouts.csv', ['DE\u200B-3', 'DE-4', 'DE-3'])]);
    expect(r.warnings).toEqual([
      `payouts.csv line 4: reference_id "DE-3" looks the same as line 2's "DE\\u200b-3" (${SAME}); check that these are two different payouts`,
    ]);
  });

  it('warns about NFC and NFD spellings in either order, across files', async () => {
    const nfc = 'Zahlung-Ä1';
    const nfd = 'Zahlung-A\u03081';
    const first = await plan([csvFile('a.csv', [nfc]), csvFile('b.csv', ['x', nfd])]);
    expect(first.warnings).toEqual([
      `b.csv line 3: reference_id "${nfd}" looks the same as a.csv line 2's "${nfc}" (${SAME}); check that these are two different payouts`,
    ]);
    const second = await plan([csvFile('a.csv', [nfd]), csvFile('b.csv', [nfc])]);
    expect(second.warnings).toEqual([
      `b.csv line 2: reference_id "${nfc}" looks the same as a.csv line 2's "${nfd}" (${SAME}); check that these are two different payouts`,
    ]);
  });

  it('warns about two different invisible spellings, and about bidi controls and full-width letters', async () => {
    const r = await plan([csvFile('p.csv', ['DE\u200C-3', '\u202ADE-3\u202C', 'ＤＥ-3'])]);
    expect(r.warnings).toEqual([
      `p.csv line 3: reference_id "\\u202aDE-3\\u202c" looks the same as line 2's "DE\\u200c-3" (${SAME}); check that these are two different payouts`,
      `p.csv line 4: reference_id "ＤＥ-3" looks the same as line 2's "DE\\u200c-3" (${SAME}); check that these are two different payouts`,
    ]);
  });

  it('does not warn about different references, or about exact repeats (which are refused)', async () => {
    const distinct = await plan([csvFile('p.csv', ['Zahlung-Ä1', 'Zahlung-Ö1', 'DE-3', 'DE-33'])]);
    expect(distinct.warnings).toEqual([]);
    const repeated = await plan([csvFile('p.csv', ['DE\u200B-3', 'DE\u200B-3'])], true);
    expect(repeated.warnings).toEqual([]);
    expect(repeated.problems).toHaveLength(1);
  });
});

describe('LookalikeReferences', () => {
  it('asks only about folded forms, and warns only about those some row spells exactly', () => {
    const warnings: string[] = [];
    const l = new LookalikeReferences((m) => warnings.push(m));
    l.see('DE\u200B-3', { file: 'p.csv', location: 'line 2' });
    l.see('DE-4', { file: 'p.csv', location: 'line 3' });
    const asked: string[] = [];
    l.confirm((ref) => {
      asked.push(ref);
      return undefined;
    });
    expect(asked).toEqual(['DE-3']);
    expect(warnings).toEqual([]);
    l.confirm(() => ({ file: 'q.csv', location: 'line 9', order: 5 }));
    expect(warnings).toEqual([
      `q.csv line 9: reference_id "DE-3" looks the same as p.csv line 2's "DE\\u200b-3" (${SAME}); check that these are two different payouts`,
    ]);
  });
});
