import { describe, expect, it } from 'vitest';
import { priorState } from '../../../src/core/send/resume.js';
import type { PriorRow } from '../../../src/domain/history.js';
import { payoutHash } from '../../../src/state/index.js';

const payout = {
  reference_id: 'R-1',
  amount: '10.00',
  currency: 'EUR',
  recipient: 'r@example.com',
};

/** A row of an earlier run that sent R-1, as `client_id`, with the fields it recorded. */
function prior(client_id: string, recorded = payout): PriorRow {
  return {
    row: 0,
    payout,
    run_id: `run-${client_id}`,
    client_id,
    hash: payoutHash(recorded),
    hash_version: 2,
    state: 'done',
    req: 1,
    sent_at: '2026-11-24T12:00:00.000Z',
    status: 'success',
    transaction_id: 'T-1',
    charges: null,
    message: null,
  };
}

describe('priorState and the Client-Id', () => {
  it('settles what this key recorded, and rechecks what only another key recorded', () => {
    expect(priorState([prior('key-a')], 'key-a').settled.size).toBe(1);
    const other = priorState([prior('key-a')], 'key-b');
    expect(other.settled.size).toBe(0);
    expect([...other.recheck.values()]).toEqual([
      { row: 0, payout, runId: 'run-key-a', clientId: 'key-a' },
    ]);
    // Recorded by both: this key's record settles it.
    expect(priorState([prior('key-a'), prior('key-b')], 'key-b').recheck.size).toBe(0);
  });

  it("asks the service, not the history, about another key's payout with other fields", () => {
    const other = { ...payout, amount: '99.00' };
    expect(() => priorState([prior('key-a', other)], 'key-a')).toThrow(/problem in the input/);
    expect(priorState([prior('key-a', other)], 'key-b').recheck.size).toBe(1);
  });
});
