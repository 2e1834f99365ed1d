import { describe, expect, it } from 'vitest';
import { retriesText } from '../../../src/core/approvals/screen-view.js';
import { type PreparedScreen, retryVerdicts } from '../../../src/core/approvals/screen.js';
import { decide } from '../../../src/core/send/decide.js';
import type { PriorRow } from '../../../src/domain/history.js';

// The approver's screen judges a retry row's original as the send does: only failed or
// canceled lets it go; everything else the send refuses, which the screen must say.

const payout = (reference_id: string) => ({
  reference_id,
  amount: '1.00',
  currency: 'EUR',
  recipient: 'r@ex.com',
});

/** The screen's verdicts: the retry rows decided from the history alone, as a send decides them. */
function verdictsOf(
  retries: Array<{ row: number; reference_id: string; retry_of: string }>,
  rows: PriorRow[],
) {
  const staged = retries.map((r) => ({ ...r, file: 'retry.csv', location: `line ${r.row + 2}` }));
  return retryVerdicts(decide({ held: rows, retries: staged }, 'screen'));
}

/** What the history holds of `ref` for retry row `row` (`via`: a reference of its chain). */
function held(
  row: number,
  ref: string,
  at: { state?: PriorRow['state']; status?: string | null; via?: string; retry_of?: string },
): PriorRow {
  return {
    row,
    payout: payout(ref),
    run_id: `run-${ref}`,
    client_id: null,
    hash: null,
    hash_version: 2,
    state: at.state ?? 'done',
    req: 1,
    sent_at: '2026-11-24T12:00:00.000Z',
    status: at.status === undefined ? 'failed' : at.status,
    transaction_id: null,
    charges: null,
    message: at.status === undefined ? 'Account closed' : null,
    retry_of: at.retry_of ?? null,
    ...(at.via ? { via: at.via } : {}),
  };
}

describe('retryVerdicts', () => {
  const retries = ['A', 'B', 'C', 'D', 'E', 'F', 'G'].map((o, row) => ({
    row,
    reference_id: `${o}-R1`,
    retry_of: o,
  }));
  const rows: PriorRow[] = [
    held(0, 'A', { via: 'A', status: 'success' }),
    held(1, 'B', { via: 'B', status: 'pending' }),
    held(2, 'C', { via: 'C', state: 'unknown', status: null }),
    held(3, 'D', { via: 'D', status: 'canceled' }),
    held(4, 'E', { via: 'E' }),
    // The new reference of F's row is already another payout's, retrying something else.
    held(5, 'F-R1', { status: 'success', retry_of: 'X' }),
    // G was failed and retried as G-R0, which failed too.
    held(6, 'G', { via: 'G' }),
    held(6, 'G-R0', { via: 'G-R0', retry_of: 'G' }),
  ];
  const verdicts = verdictsOf(retries, rows);

  it('refuses all but a failed or canceled original, as the send does', () => {
    const states = retries.map((r) => {
      const v = verdicts.get(r.row)!;
      return [r.retry_of, v.state, v.refused];
    });
    expect(states).toEqual([
      ['A', 'paid', true],
      ['B', 'pending', true],
      ['C', 'in_doubt', true],
      ['D', 'canceled', false],
      ['E', 'failed', false],
      ['F', 'reference_used', true],
      ['G', 'retried', true],
    ]);
    expect(verdicts.get(0)!.which).toBe(', which was paid (run run-A on 2026-11-24 12:00 UTC)');
    expect(verdicts.get(4)!.which).toBe(
      ', which failed (run run-E on 2026-11-24 12:00 UTC: "Account closed")',
    );
    expect(verdicts.get(6)!.which).toMatch(
      /^, already retried as "G-R0" in run run-G-R0, which failed too: retry "G-R0", not the original/,
    );
  });

  it('counts them on the Retries: line', () => {
    const screen = (v: typeof verdicts) => ({ retries: v }) as unknown as PreparedScreen;
    expect(retriesText(screen(verdicts))).toBe(
      '7, of which 1 retries a payout already paid, 1 a payout pending at the service, 1 a payout that may have been sent, 1 a payout already retried and 1 a payout under a new reference_id another payout holds: the send will refuse them, and so the whole run (nothing is sent)',
    );
    const fine = new Map([...verdicts].filter(([row]) => row === 3 || row === 4));
    expect(retriesText(screen(fine))).toBe('2, each of a payout that failed or was canceled');
    const unheld = verdictsOf([{ row: 0, reference_id: 'Z-R1', retry_of: 'Z' }], []);
    expect(retriesText(screen(unheld))).toBe(
      '1, of which 1 retries a payout this history does not hold: the send asks the service first',
    );
    expect(retriesText(screen(new Map()))).toBeUndefined();
  });
});
