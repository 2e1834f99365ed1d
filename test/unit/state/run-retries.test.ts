import { describe, expect, it } from 'vitest';
import type { HeldRef } from '../../../src/domain/chain.js';
import { countByRetry } from '../../../src/state/run-retries.js';
import { heldLink } from './helpers.js';

// A run's counts by the one rule: a failed or canceled payout its retry paid moves to
// succeeded (and is counted in paid_by_retry), one whose retry is pending to pending; the
// counts still add up to the run's payouts.

/** The last retry of a chain, of a kind. */
const tail = (kind: HeldRef['kind']) => heldLink('R1', 'X', kind);

describe('countByRetry', () => {
  const counts = { success: 5, failed: 3, canceled: 2, pending: 1, in_flight: 0 };

  it('moves each failed or canceled payout to its chain’s state', () => {
    const c = countByRetry(counts, [
      { status: 'failed', retried: tail('success') },
      { status: 'canceled', retried: tail('success') },
      { status: 'failed', retried: tail('pending') },
      { status: 'failed', retried: tail('failed') },
      { status: 'canceled', retried: tail('doubt') },
    ]);
    expect(c).toEqual({
      success: 7,
      failed: 1,
      canceled: 1,
      pending: 2,
      in_flight: 0,
      paid_by_retry: 2,
    });
    const sum = (x: typeof c) => x.success + x.failed + x.canceled + x.pending + x.in_flight;
    expect(sum(c)).toBe(sum({ ...counts, paid_by_retry: 0 }));
  });

  it('leaves the counts of a run no retry took on as they are', () => {
    expect(countByRetry(counts, [{ status: 'failed' }])).toEqual({ ...counts, paid_by_retry: 0 });
    expect(countByRetry(counts, [])).toEqual({ ...counts, paid_by_retry: 0 });
  });
});
