import { describe, expect, it } from 'vitest';
import type { CreateAnswer, CreateResult } from '../../../src/api/types.js';
import { judgeExchange, judgeResults, matchRecord } from '../../../src/core/send/verdict.js';
import { ApiError, NetworkError } from '../../../src/errors.js';

const p = (ref: string, amount = '10.50') => ({
  payout: { reference_id: ref, amount, currency: 'EUR', recipient: 'r@example.com' },
});
const answer = (status: number, withResults: boolean): CreateAnswer => ({
  status,
  ...(withResults
    ? { response: { success_count: 0, failed_count: 0, results: [], messages: [] } }
    : {}),
  error: new ApiError(`HTTP ${status}`),
});

describe('judgeExchange: the one rule', () => {
  it('not applied only on proof', () => {
    expect(judgeExchange({ error: new NetworkError('refused', false) }).kind).toBe('not-applied');
    for (const s of [401, 403, 429, 413]) {
      expect(judgeExchange({ answer: answer(s, false) }).kind, String(s)).toBe('not-applied');
    }
  });

  it('results win under any status', () => {
    for (const s of [200, 302, 400, 401, 409, 413, 422, 429, 500, 503]) {
      expect(judgeExchange({ answer: answer(s, true) }).kind, String(s)).toBe('results');
    }
  });

  it('everything else is read back; refusals are told apart from failures', () => {
    expect(judgeExchange({ error: new NetworkError('cut', true) })).toMatchObject({
      kind: 'read-back',
      refused: false,
    });
    for (const [s, refused] of [
      [200, false],
      [302, true],
      [400, true],
      [404, true],
      [409, true],
      [500, false],
      [503, false],
    ] as const) {
      expect(judgeExchange({ answer: answer(s, false) }), String(s)).toMatchObject({
        kind: 'read-back',
        refused,
      });
    }
  });
});

describe('judgeResults', () => {
  const r = (ref: string, extra: Partial<CreateResult> = {}): CreateResult => ({
    reference_id: ref,
    status: 'success',
    ...extra,
  });

  it('takes an amount written as our very text, or as the same decimal, and nothing else', () => {
    const j = judgeResults(
      [
        r('A', { amount: 10.5 }),
        r('B', { amount: 1e21 }),
        r('C', { amount: 10.5 }),
        r('D', { amount: 10.05 }),
      ],
      [p('A', '10.5'), p('B', '1e+21'), p('C', '10.50'), p('D', '10.5')],
    );
    expect(j.stated.map((s) => s.item.payout.reference_id)).toEqual(['A', 'B', 'C']);
    expect(j.readBack.map((x) => x.item.payout.reference_id)).toEqual(['D']);
  });

  it('states matching results, reads back missing, mismatched and twice-answered ones', () => {
    const j = judgeResults(
      [
        r('A', { amount: 10.5 }),
        r('B', { amount: 11 }),
        r('C'),
        r('C', { status: 'failed' }),
        r('E', { status: 'processing' }),
        r('X'),
      ],
      [p('A'), p('B'), p('C'), p('D'), p('E')],
    );
    expect(j.stated.map((s) => s.item.payout.reference_id)).toEqual(['A']);
    expect(j.readBack.map((x) => [x.item.payout.reference_id, Boolean(x.stated)])).toEqual([
      ['B', false],
      ['C', false],
      ['D', false],
      ['E', true],
    ]);
    expect(j.strays).toEqual(['X']);
  });

  it('accepts the same result given twice', () => {
    expect(judgeResults([r('A'), r('A')], [p('A')]).stated).toHaveLength(1);
  });
});

describe('matchRecord', () => {
  const payout = p('A').payout;
  it('compares amounts as decimals', () => {
    expect(matchRecord(payout, { reference_id: 'A', status: 'success', amount: 10.5 }).kind).toBe(
      'ours',
    );
    expect(
      matchRecord(payout, {
        reference_id: 'A',
        status: 'success',
        amount: '10.500' as unknown as number,
      }).kind,
    ).toBe('ours');
    expect(matchRecord(payout, { reference_id: 'A', status: 'success', amount: 5000 }).kind).toBe(
      'other-payout',
    );
  });
  it('another reference proves nothing', () => {
    expect(matchRecord(payout, { reference_id: 'B', status: 'success' }).kind).toBe('wrong-record');
  });
});
