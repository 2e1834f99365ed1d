import { describe, expect, it } from 'vitest';
import { readBack } from '../../../src/core/send/readback.js';
import { NotFoundError } from '../../../src/errors.js';
import { FakeClock } from '../../helpers/main.js';

// Issue 33, item 3: each quiet-time wait is shown with what it waits for, and the run says
// once, at its first wait, why waiting protects the money.

describe('a read-back wait', () => {
  it('is shown for its whole length, twice a read-back; the reason is said at the first wait only', async () => {
    const clock = new FakeClock(1_000_000);
    const notes: string[] = [];
    const shown: Array<{ what: string; ms: number; ended: boolean }> = [];
    const deps = {
      client: {
        getPayout: async (ref: string): Promise<never> => {
          throw new NotFoundError(ref);
        },
      },
      clock,
      interrupt: new AbortController().signal,
      notify: (m: string) => notes.push(m),
      wait: (what: string, ms: number) => {
        const w = { what, ms, ended: false };
        shown.push(w);
        return () => {
          w.ended = true;
        };
      },
      why: { told: false },
    };
    const item = (ref: string) => ({
      payout: { reference_id: ref, amount: '1.00', currency: 'EUR', recipient: 'r@example.com' },
    });
    const quiet = { quietAt: 1_050_000, intervalMs: 50_000 };
    await readBack([item('A'), item('B')], quiet, deps);
    await readBack([item('C')], { quietAt: clock.now() + 50_000, intervalMs: 50_000 }, deps);
    expect(shown).toEqual([
      { what: 'reading 2 payouts back in', ms: 50_000, ended: true },
      { what: 'reading 2 payouts back again in', ms: 50_000, ended: true },
      { what: 'reading 1 payout back in', ms: 50_000, ended: true },
      { what: 'reading 1 payout back again in', ms: 50_000, ended: true },
    ]);
    const why = notes.filter((n) => n.includes('keeps a payout from being paid twice'));
    expect(why).toHaveLength(1);
    expect(notes[0]).toBe(why[0]);
  });
});
