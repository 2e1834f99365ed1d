import { describe, expect, it } from 'vitest';
import { shownState } from '../../../src/core/approvals/screen.js';
import type { PreparedRun } from '../../../src/state/pg/approvals.js';

// How two runs differ is test/unit/core/series.test.ts's.

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
