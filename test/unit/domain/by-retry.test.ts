import { describe, expect, it } from 'vitest';
import { byRetry, chainKind } from '../../../src/domain/chain.js';

// The one rule for a failed payout that a retry took on, which send, status, runs, runs show
// and reconcile all count by: paid by its retry is paid; pending as its retry is pending; any
// other payout keeps its own status. Before it, status counted such a payout failed (exit 4)
// while send counted it paid.

describe('byRetry and chainKind', () => {
  it.each([
    // Own status, the last retry's kind: the payout's state, and what it counts as.
    ['failed', 'success', 'paid_by_retry', 'success'],
    ['canceled', 'success', 'paid_by_retry', 'success'],
    ['FAILED', 'success', 'paid_by_retry', 'success'],
    ['failed', 'pending', 'pending_by_retry', 'pending'],
    ['canceled', 'pending', 'pending_by_retry', 'pending'],
    // The retry failed too, or its outcome is not known: the payout's own status stands.
    ['failed', 'failed', undefined, 'failed'],
    ['failed', 'doubt', undefined, 'failed'],
    ['canceled', 'doubt', undefined, 'failed'],
  ] as const)('%s, retried and %s: %s, counted %s', (status, retry, state, kind) => {
    expect(byRetry(status, { kind: retry })).toBe(state);
    expect(chainKind(status, { kind: retry })).toBe(kind);
  });

  it('leaves a payout never retried, or one that did not fail, as its own status says', () => {
    expect(byRetry('failed', undefined)).toBeUndefined();
    expect(chainKind('failed', undefined)).toBe('failed');
    // A payout paid or pending is never "paid by" a retry: no retry of it should exist.
    expect(byRetry('success', { kind: 'success' })).toBeUndefined();
    expect(byRetry('pending', { kind: 'success' })).toBeUndefined();
    expect(chainKind('pending', { kind: 'success' })).toBe('pending');
    expect(byRetry(null, { kind: 'success' })).toBeUndefined();
    expect(byRetry('', { kind: 'success' })).toBeUndefined();
    // The CLI's own statuses are not the service's word that it failed.
    expect(byRetry('not_sent', { kind: 'success' })).toBeUndefined();
    expect(byRetry('unknown', { kind: 'success' })).toBeUndefined();
  });
});
