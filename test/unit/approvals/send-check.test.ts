import { describe, expect, it } from 'vitest';
import {
  approvalDocOf,
  approvalStatusDoc,
  noteOf,
  refuseEarly,
  refuseUnapproved,
} from '../../../src/core/approvals/send.js';
import { freshSplit } from '../../../src/core/send/fates.js';
import { ApprovalStateError, UsageError } from '../../../src/errors.js';
import { CurrencyTotals } from '../../../src/money/amount.js';
import type { PreparedRun } from '../../../src/state/pg/approvals.js';

// The approval check at send time, hit directly: what the rule's word on a send's payouts
// says on the Approval: line and in --json, and when it refuses the run.

const prep = {
  prep_id: 'p1c1e9d0f2a3b4c5',
  events: [
    {
      decision: 'approved',
      by_role: 'bob',
      os_user: 'bob',
      host: 'laptop',
      at: '2026-12-20T13:14:00.000Z',
    },
  ],
} as unknown as PreparedRun;

const blocked = (
  state: 'awaiting_approval' | 'rejected' | 'expired',
  id: string | null,
  reason: string | null = null,
) => new ApprovalStateError('refused', { state, prepared_run_id: id, reason, expires_at: null });

describe('the Approval: line', () => {
  it.each([
    [{ kind: 'approved', prep }, 'approved: p1c1e9d0f2a3b4c5 by bob at 13:14', 'approved'],
    [
      { kind: 'not needed', why: 'this service has no approval rule' },
      'not needed: this service has no approval rule',
      'not_needed',
    ],
    [
      { kind: 'needed', refusal: blocked('awaiting_approval', null) },
      'needed: no approved run holds these payouts (the send will be refused)',
      'needed',
    ],
    [
      { kind: 'needed', refusal: blocked('awaiting_approval', 'p9') },
      "needed: run p9 awaits another person's approval (the send will be refused)",
      'needed',
    ],
    [
      { kind: 'needed', refusal: blocked('rejected', 'p9', 'wrong IBAN') },
      'needed: run p9 was rejected: "wrong IBAN" (the send will be refused)',
      'needed',
    ],
    [
      { kind: 'needed', refusal: blocked('expired', 'p9') },
      'needed: run p9 expired (the send will be refused)',
      'needed',
    ],
    [
      { kind: 'needed', refusal: new UsageError('other batch') },
      'needed: these payouts go with another service, batch or webhook than the approved run (the send will be refused)',
      'needed',
    ],
  ] as const)('%j', (status, line, state) => {
    const note = noteOf(status as Parameters<typeof noteOf>[0]);
    expect([note.approval, note.state]).toEqual([line, state]);
    expect(approvalStatusDoc(note)).toEqual({
      state,
      prepared_run_id:
        status.kind === 'approved'
          ? prep.prep_id
          : status.kind === 'needed' && status.refusal instanceof ApprovalStateError
            ? status.refusal.approval.prepared_run_id
            : null,
      text: line,
    });
  });

  it('names the approvers in the send document', () => {
    expect(approvalDocOf(prep)).toEqual({
      prepared_run_id: 'p1c1e9d0f2a3b4c5',
      approvers: [{ role: 'bob', os_user: 'bob', host: 'laptop', at: '2026-12-20T13:14:00.000Z' }],
      approved_at: '2026-12-20T13:14:00.000Z',
    });
  });
});

describe('the refusal of a run the rule refuses', () => {
  const refusal = blocked('awaiting_approval', null);
  const needed = noteOf({ kind: 'needed', refusal });
  const totals = new CurrencyTotals();
  totals.add('EUR', 100n);
  const moving = freshSplit({ totals, requestCount: 1 });
  const waiting = { ...moving, toSend: new CurrencyTotals(), toLookUp: totals };

  it('refuses early only a run that moves money whatever the service answers', () => {
    expect(() => refuseEarly(needed, moving)).toThrow(refusal);
    expect(() => refuseEarly(needed, waiting)).not.toThrow();
    expect(() => refuseEarly(noteOf({ kind: 'not needed', why: 'x' }), moving)).not.toThrow();
  });

  it('refuses, once decided, a run that sends anything; one that sends nothing goes on', () => {
    expect(() => refuseUnapproved(needed, false)).toThrow(refusal);
    expect(() => refuseUnapproved(needed, true)).not.toThrow();
  });
});
