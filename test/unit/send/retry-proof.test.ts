import { describe, expect, it } from 'vitest';
import { proofProblem } from '../../../src/core/send/refusals.js';
import type { HeldRef } from '../../../src/domain/chain.js';

// What the service's answer about a retried original does to the retry row: only failed or
// canceled lets it go, whatever the history says.

const retry = {
  row: 1,
  reference_id: 'N-1-R1',
  retry_of: 'N-1',
  file: 'r.csv',
  location: 'line 2',
};

/** The history's link of the original, as failed in run R. */
const failedInHistory: HeldRef = {
  ref: 'N-1',
  retryOf: null,
  runId: 'aaaaaaaaaaaaaaaa',
  kind: 'failed',
  status: 'failed',
  transactionId: null,
  charges: null,
  message: 'Account closed',
  at: null,
};

const found = (status: string) => ({
  reference_id: 'N-1',
  kind: 'found' as const,
  record: { reference_id: 'N-1', status, transaction_id: 'T-1' },
});

describe('proofProblem', () => {
  it('lets a retry go only when the service holds the original failed or canceled', () => {
    expect(proofProblem(retry, found('failed'), failedInHistory)).toBeUndefined();
    expect(proofProblem(retry, found('canceled'), undefined)).toBeUndefined();
    // An unanswered lookup is not a refusal of the row: the run stops as unknown (exit 7).
    const error = { reference_id: 'N-1', kind: 'error' as const, error: new Error('HTTP 503') };
    expect(proofProblem(retry, error, failedInHistory)).toBeUndefined();
  });

  it('refuses success, pending, an undocumented status and "not found", saying what the history claimed', () => {
    expect(proofProblem(retry, found('success'), failedInHistory)).toBe(
      'retries reference_id "N-1", which the service holds as "success" (transaction T-1): a new reference would pay it again; the history says failed (run aaaaaaaaaaaaaaaa), which is wrong; clear this new_reference_id',
    );
    for (const status of ['pending', 'processing']) {
      expect(proofProblem(retry, found(status), undefined)).toContain(
        `holds as "${status}" (transaction T-1): not final, it may still be paid`,
      );
    }
    const missing = { reference_id: 'N-1', kind: 'not_found' as const };
    expect(proofProblem(retry, missing, undefined)).toContain(
      'which the service holds no payout of (the history does not know it)',
    );
    expect(proofProblem(retry, missing, failedInHistory)).toContain(
      '(the history says failed (run aaaaaaaaaaaaaaaa))',
    );
  });
});
