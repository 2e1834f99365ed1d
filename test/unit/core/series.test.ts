import { describe, expect, it } from 'vitest';
import {
  diffRows,
  type MatchRow,
  retryChange,
  seriesByName,
  seriesByRecipients,
  textPattern,
} from '../../../src/core/series.js';

/** A payout row: [reference, amount, recipient, description]. */
function row(
  i: number,
  ref: string,
  amount: string,
  recipient: string,
  description: string | null = null,
): MatchRow {
  return { row: i, reference_id: ref, amount, currency: 'EUR', recipient, description };
}

describe('a text without the time it names', () => {
  it('reads November and December alike, in English and German, as names and numbers', () => {
    expect(textPattern('NOV-3')).toBe(textPattern('DEC-3'));
    expect(textPattern('Gehalt Dezember Felix Höß 20')).toBe('gehalt <month> felix höß 20');
    expect(textPattern('Gehalt November Felix Höß 20')).toBe('gehalt <month> felix höß 20');
    expect(textPattern('payroll-2026-11')).toBe('payroll-<year>-<month>');
    expect(textPattern('pay 30.11.2026 e7')).toBe('pay <day>.<month>.<year> e7');
    expect(textPattern('run-20261130.csv')).toBe('run-<date>.csv');
    // A number that is not beside a year is kept: employee 20 is not employee 21.
    expect(textPattern('NOV-0047')).not.toBe(textPattern('NOV-0048'));
  });
});

describe('a series', () => {
  const run = (batch: string | null, ...inputs: string[]) => ({ batch_reference: batch, inputs });

  it('is named by the batch reference pattern, else an input name pattern both runs have', () => {
    expect(seriesByName(run('payroll-2026-12'), run('payroll-2026-11'))).toEqual({
      by: 'batch_reference',
      pattern: 'payroll-<year>-<month>',
    });
    expect(seriesByName(run(null, '/home/ana/dec.csv'), run(null, 'nov.csv'))).toEqual({
      by: 'input_name',
      pattern: '<month>.csv',
    });
    expect(seriesByName(run(null, 'retry.csv'), run(null, 'july-test.csv'))).toBeUndefined();
  });

  it("is named by recipients when at least half of each run pays the other run's", () => {
    const forty = new Set(Array.from({ length: 40 }, (_, i) => `e${i}@ex.com`));
    const dec = new Set([...forty].slice(1).concat('mallory@ex.com'));
    expect(seriesByRecipients(dec, forty)).toEqual({
      by: 'recipients',
      pattern: '39 of 40 recipients',
    });
    // A 2-row retry file is not the month it retries from.
    expect(seriesByRecipients(new Set(['e1@ex.com', 'e2@ex.com']), forty)).toBeUndefined();
    expect(seriesByRecipients(new Set(['x@ex.com']), new Set(['y@ex.com']))).toBeUndefined();
  });
});

describe('the difference between two runs', () => {
  it('matches by reference_id when the runs share one: a swapped recipient is a change', () => {
    const then = [row(0, 'A', '1.00', 'a@ex.com'), row(1, 'B', '2.00', 'b@ex.com')];
    const now = [row(0, 'A', '1.00', 'mallory@ex.com'), row(1, 'C', '3.00', 'c@ex.com')];
    const d = diffRows(then, now);
    expect(d.matched_by).toBe('reference_id');
    expect(
      d.changes.map((c) => [
        c.change,
        c.before?.reference_id,
        c.after?.reference_id,
        c.matched_by,
        c.fields,
      ]),
    ).toEqual([
      ['changed', 'A', 'A', 'reference_id', ['recipient']],
      ['added', undefined, 'C', null, []],
      ['removed', 'B', undefined, null, []],
    ]);
  });

  it('matches a new month by recipient, keeping two payouts to one recipient apart', () => {
    const nov = [
      row(0, 'NOV-1', '10.00', 'a@ex.com'),
      row(1, 'NOV-2', '5.00', 'a@ex.com'),
      row(2, 'NOV-3', '7.00', 'b@ex.com'),
    ];
    const dec = [
      row(0, 'DEC-1', '10.00', 'a@ex.com'),
      row(1, 'DEC-2', '6.00', 'a@ex.com'),
      row(2, 'DEC-3', '7.00', 'b@ex.com'),
    ];
    const d = diffRows(nov, dec);
    expect(d.matched_by).toBe('recipient');
    expect(d.changes).toEqual([
      {
        change: 'changed',
        before: { reference_id: 'NOV-2', amount: '5.00', currency: 'EUR', recipient: 'a@ex.com' },
        after: { reference_id: 'DEC-2', amount: '6.00', currency: 'EUR', recipient: 'a@ex.com' },
        matched_by: 'recipient',
        matched_on: null,
        fields: ['amount'],
      },
    ]);
  });

  it('names a redirected salary as a changed recipient, with the field that matched', () => {
    const nov = [
      row(0, 'N-A', '3061.76', 'felix@ex.com', 'Gehalt November Felix Höß 20'),
      row(1, 'N-B', '2500.00', 'berta@ex.com', 'Gehalt November Berta 21'),
    ];
    const dec = [
      row(0, 'D-X', '3061.76', 'mallory+new@evil.example', 'Gehalt Dezember Felix Höß 20'),
      row(1, 'D-Y', '2500.00', 'berta@ex.com', 'Gehalt Dezember Berta 21'),
    ];
    const [change, ...rest] = diffRows(nov, dec).changes;
    expect(rest).toEqual([]);
    expect(change).toMatchObject({
      change: 'changed',
      before: { recipient: 'felix@ex.com' },
      after: { recipient: 'mallory+new@evil.example' },
      matched_by: 'description',
      matched_on: 'gehalt <month> felix höß 20',
      fields: ['recipient'],
    });
    // Without descriptions (a dry run keeps none), the amount, unique in both runs, matches.
    const bare = (rows: MatchRow[]) => rows.map((r) => ({ ...r, description: null }));
    expect(diffRows(bare(nov), bare(dec)).changes[0]).toMatchObject({
      matched_by: 'amount',
      matched_on: 'EUR 3061.76',
    });
  });

  it('pairs by a reference pattern before an amount, and never by a value two rows share', () => {
    const nov = [1, 2, 3].map((i) => row(i, `NOV-${i}`, '8000.00', `e${i}@ex.com`, 'salary'));
    const dec = [1, 2, 3].map((i) =>
      row(i, `DEC-${i}`, '8000.00', i === 3 ? 'mallory@ex.com' : `e${i}@ex.com`, 'salary'),
    );
    expect(diffRows(nov, dec).changes).toEqual([
      expect.objectContaining({
        matched_by: 'reference_pattern',
        matched_on: '<month>-3',
        fields: ['recipient'],
      }),
    ]);
    // Two leavers and two hires with one amount and one description: nothing pairs them.
    const then = [row(0, 'A1', '5.00', 'a@ex.com', 'fee'), row(1, 'B1', '5.00', 'b@ex.com', 'fee')];
    const now = [row(0, 'C7', '5.00', 'c@ex.com', 'fee'), row(1, 'D9', '5.00', 'd@ex.com', 'fee')];
    expect(diffRows(then, now).changes.map((c) => c.change)).toEqual([
      'added',
      'added',
      'removed',
      'removed',
    ]);
  });

  it('flags a retry whose recipient or amount differs from its original', () => {
    const original = {
      reference_id: 'NOV-7',
      amount: '10.00',
      currency: 'EUR',
      recipient: 'felix@ex.com',
    };
    expect(retryChange(original, { ...original, reference_id: 'NOV-7-R1' })).toBeUndefined();
    expect(
      retryChange(original, {
        ...original,
        reference_id: 'NOV-7-R1',
        amount: '10',
        recipient: 'm@evil.example',
      }),
    ).toMatchObject({
      matched_by: 'retry_of',
      matched_on: 'NOV-7',
      fields: ['recipient'],
    });
  });
});
