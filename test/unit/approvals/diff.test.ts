import { describe, expect, it } from 'vitest';
import { diffRows, shownState } from '../../../src/core/approvals/screen.js';
import type { PreparedPayout, PreparedRun } from '../../../src/state/pg/approvals.js';

/** A payout row of a prepared run. */
function row(row: number, ref: string, amount: string, recipient: string): PreparedPayout {
  return {
    row,
    reference_id: ref,
    amount,
    currency: 'EUR',
    recipient,
    description: null,
    hash: `${ref}|${amount}|${recipient}`,
    retry_of: null,
  };
}

describe('the difference between two prepared runs', () => {
  it('matches by reference_id when the runs share one: a swapped recipient is a change', () => {
    const then = [row(0, 'A', '1.00', 'a@ex.com'), row(1, 'B', '2.00', 'b@ex.com')];
    const now = [row(0, 'A', '1.00', 'mallory@ex.com'), row(1, 'C', '3.00', 'c@ex.com')];
    const d = diffRows(then, now);
    expect(d.matched_by).toBe('reference_id');
    expect(d.changes.map((c) => [c.change, c.before?.reference_id, c.after?.reference_id])).toEqual(
      [
        ['changed', 'A', 'A'],
        ['added', undefined, 'C'],
        ['removed', 'B', undefined],
      ],
    );
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
      },
    ]);
  });
});

describe("a prepared run's state", () => {
  const base = { prep_id: 'p000000000000001', expired: false } as PreparedRun;
  const at = '2026-11-28T10:00:00.000Z';
  const event = (decision: 'approved' | 'sent', run_id: string | null = null) => ({
    decision,
    reason: null,
    by_role: 'bob',
    os_user: null,
    host: null,
    run_id,
    at,
  });
  const run = (running: boolean, left: number) =>
    ({ running, counts: { in_flight: 0, not_sent: left } }) as never;

  it('is sending while its run is, partly sent while it is unfinished, sent once done', () => {
    const p = { ...base, events: [event('approved'), event('sent', 'r1')] };
    expect(shownState(p, new Map([['r1', run(true, 3)]]))).toBe('sending');
    expect(shownState(p, new Map([['r1', run(false, 3)]]))).toBe('partly sent');
    expect(shownState(p, new Map([['r1', run(false, 0)]]))).toBe('sent');
    expect(shownState({ ...base, events: [event('approved')] }, new Map())).toBe('approved');
  });
});
