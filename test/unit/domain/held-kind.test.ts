import { describe, expect, it } from 'vitest';
import { heldKind, isCanceled } from '../../../src/domain/statuses.js';

// One classifier of a held row serves every reader of the history: the send's decision, a
// payout's chain, `runs`, the approver's screen. These readers used to disagree on a status
// the interface does not name and on a status written in capitals.

describe('heldKind', () => {
  it.each([
    [{ state: 'in_flight', status: null }, 'doubt'],
    [{ state: 'unknown', status: null }, 'doubt'],
    [{ state: 'done', status: null }, 'doubt'],
    [{ state: 'done', status: '' }, 'doubt'],
    [{ state: 'done', status: 'success' }, 'success'],
    [{ state: 'done', status: 'SUCCESS' }, 'success'],
    [{ state: 'done', status: 'pending' }, 'pending'],
    // Held by the service in a status the interface does not name: not final.
    [{ state: 'done', status: 'processing' }, 'pending'],
    [{ state: 'done', status: 'failed' }, 'failed'],
    [{ state: 'done', status: 'Failed' }, 'failed'],
    [{ state: 'done', status: 'canceled' }, 'failed'],
    [{ state: 'done', status: 'CANCELED' }, 'failed'],
  ])('%j is %s', (row, kind) => {
    expect(heldKind(row)).toBe(kind);
  });

  it('tells canceled apart, in any case', () => {
    expect([
      isCanceled('canceled'),
      isCanceled('Canceled'),
      isCanceled('failed'),
      isCanceled(null),
    ]).toEqual([true, true, false, false]);
  });
});
