import { describe, expect, it } from 'vitest';
import type { PayoutRecord } from '../../../src/api/types.js';
import { heldTexts, readBack, standing } from '../../../src/core/send/readback.js';
import { CredentialsError, NotFoundError } from '../../../src/errors.js';
import { FakeClock } from '../../helpers/main.js';
import { held } from './history.js';

const payout = (ref: string, amount = '10.50') => ({
  payout: { reference_id: ref, amount, currency: 'EUR', recipient: `${ref}@example.com` },
});

/** A reader whose ledger fills in at `appliesAt` on the clock. */
function reader(clock: FakeClock, held: Record<string, PayoutRecord>, appliesAt = 0) {
  const asked: string[] = [];
  return {
    asked,
    getPayout: async (ref: string): Promise<PayoutRecord> => {
      asked.push(ref);
      const rec = held[ref];
      if (!rec || clock.now() < appliesAt) throw new NotFoundError(ref);
      return rec;
    },
  };
}

const record = (ref: string, amount = 10.5): PayoutRecord => ({
  reference_id: ref,
  status: 'success',
  amount,
  currency: 'EUR',
  recipient: `${ref}@example.com`,
});

describe('readBack', () => {
  it('does not trust "not found" before the quiet time: it waits, then reads again', async () => {
    const clock = new FakeClock(1_000_000);
    const notes: string[] = [];
    const r = reader(clock, { A: record('A') }, 1_030_000);
    const out = await readBack(
      [payout('A')],
      { quietAt: 1_050_000 },
      {
        client: r,
        clock,
        interrupt: new AbortController().signal,
        notify: (m) => notes.push(m),
      },
    );
    expect(out.outcomes.get('A')?.kind).toBe('found');
    expect(r.asked).toEqual(['A', 'A']);
    expect(clock.waits.reduce((a, b) => a + b, 0)).toBe(50_000);
    expect(notes[0]).toMatch(/waiting 50 s before reading it again/);
  });

  it('waits until the quiet time, not a quiet time more after a slow read', async () => {
    const clock = new FakeClock(1_000_000);
    const r = reader(clock, {});
    // Each lookup takes 20 s on the clock (a slow service, many payouts to read).
    const slow = {
      getPayout: async (ref: string) => {
        clock.t += 20_000;
        return r.getPayout(ref);
      },
    };
    const out = await readBack(
      [payout('A')],
      { quietAt: 1_050_000, intervalMs: 50_000 },
      { client: slow, clock, interrupt: new AbortController().signal, notify: () => {} },
    );
    expect(out.outcomes.get('A')).toEqual({ kind: 'not-found' });
    // Read at 1_000_000-1_020_000, then until 1_050_000 (30 s), read, a quiet interval, read:
    // 80 s of waits, where waiting the quiet time from the read's start took 100 s.
    expect(clock.waits.reduce((a, b) => a + b, 0)).toBe(80_000);
    expect(r.asked).toEqual(['A', 'A', 'A']);
  });

  it('reads again at once when a slow read has outlasted the quiet time', async () => {
    const clock = new FakeClock(1_000_000);
    const r = reader(clock, {});
    const slow = {
      getPayout: async (ref: string) => {
        clock.t += 60_000;
        return r.getPayout(ref);
      },
    };
    const notes: string[] = [];
    const out = await readBack(
      [payout('A')],
      { quietAt: 1_050_000 },
      {
        client: slow,
        clock,
        interrupt: new AbortController().signal,
        notify: (m) => notes.push(m),
      },
    );
    // The first read began before the quiet time: it proves nothing, the second one does.
    expect(out.outcomes.get('A')).toEqual({ kind: 'not-found' });
    expect(r.asked).toEqual(['A', 'A']);
    expect(clock.waits).toEqual([]);
    expect(notes).toEqual([]);
  });

  it('takes "not found" as proof once the quiet time has passed, without waiting', async () => {
    const clock = new FakeClock(2_000_000);
    const r = reader(clock, {});
    const out = await readBack(
      [payout('A')],
      { quietAt: 1_999_999 },
      {
        client: r,
        clock,
        interrupt: new AbortController().signal,
        notify: () => {},
      },
    );
    expect(out.outcomes.get('A')).toEqual({ kind: 'not-found' });
    expect(clock.waits).toEqual([]);
  });

  it('reads "not found" once more a quiet interval later: a lookup that lags its write is found', async () => {
    const clock = new FakeClock(1_000_000);
    const notes: string[] = [];
    // The service applied the payout, but its lookups show it only at 1_070_000.
    const r = reader(clock, { A: record('A') }, 1_070_000);
    const out = await readBack(
      [payout('A')],
      { quietAt: 1_050_000, intervalMs: 50_000 },
      {
        client: r,
        clock,
        interrupt: new AbortController().signal,
        notify: (m) => notes.push(m),
      },
    );
    expect(out.outcomes.get('A')?.kind).toBe('found');
    expect(r.asked).toEqual(['A', 'A', 'A']);
    expect(clock.waits.reduce((a, b) => a + b, 0)).toBe(100_000);
    expect(notes[1]).toMatch(
      /still has no record of 1 payout after the quiet time: reading it once more in 50 s/,
    );
  });

  it('takes "not found" as proof only when it holds twice, a quiet interval apart', async () => {
    const clock = new FakeClock(2_000_000);
    const r = reader(clock, {});
    const out = await readBack(
      [payout('A')],
      { quietAt: 1_999_999, intervalMs: 10_000 },
      {
        client: r,
        clock,
        interrupt: new AbortController().signal,
        notify: () => {},
      },
    );
    expect(out.outcomes.get('A')).toEqual({ kind: 'not-found' });
    expect(r.asked).toEqual(['A', 'A']);
    expect(clock.waits.reduce((a, b) => a + b, 0)).toBe(10_000);
  });

  it('leaves the outcome unknown when the user stops the wait', async () => {
    const clock = new FakeClock(0);
    const stop = new AbortController();
    stop.abort();
    const out = await readBack(
      [payout('A')],
      { quietAt: 50_000 },
      {
        client: reader(clock, {}),
        clock,
        interrupt: stop.signal,
        notify: () => {},
      },
    );
    expect(out.outcomes.get('A')?.kind).toBe('unknown');
  });

  it('tells another payout under our reference from ours, and a wrong record from both', async () => {
    const clock = new FakeClock(0);
    const held = { A: record('A', 5000), B: { ...record('B'), reference_id: 'Z' } };
    const out = await readBack(
      [payout('A'), payout('B')],
      { quietAt: 0 },
      {
        client: reader(clock, held),
        clock,
        interrupt: new AbortController().signal,
        notify: () => {},
      },
    );
    expect(out.outcomes.get('A')).toMatchObject({ kind: 'other-payout' });
    expect(out.outcomes.get('B')).toMatchObject({ kind: 'unknown' });
  });

  it('stops at a credentials error: everything unknown, the error kept', async () => {
    const clock = new FakeClock(0);
    const out = await readBack(
      [payout('A'), payout('B')],
      { quietAt: 0 },
      {
        client: {
          getPayout: async () => {
            throw new CredentialsError('Invalid API credentials');
          },
        },
        clock,
        interrupt: new AbortController().signal,
        notify: () => {},
      },
    );
    expect(out.fatal).toBeInstanceOf(CredentialsError);
    expect([...out.outcomes.values()].every((o) => o.kind === 'unknown')).toBe(true);
  });
});

describe('a read-back made before the lock (issue 51)', () => {
  const inFlight = { state: 'in_flight' as const, status: null, req: 2 };
  const before = [
    held(1, 'A', inFlight),
    held(2, 'B', inFlight),
    held(2, 'B', { run_id: 'run-b', ...inFlight }),
  ];
  const items = [
    { row: 1, ...payout('A') },
    { row: 2, ...payout('B') },
  ];
  const texts = heldTexts(before, new Set([1, 2]));
  const proofs = new Map([
    ['A', { outcome: { kind: 'not-found' as const }, against: texts.get(1)! }],
    ['B', { outcome: { kind: 'not-found' as const }, against: texts.get(2)! }],
  ]);

  it('stands under the lock while the history holds the same rows of the payout', () => {
    const now = standing(items, proofs, before);
    expect([...now.keys()]).toEqual(['A', 'B']);
  });

  it('is void once a request carried the payout since, or a result was recorded', () => {
    // Sent again by another run (a new intent), and B's result recorded by run-b.
    const after = [
      held(1, 'A', inFlight),
      held(1, 'A', { run_id: 'run-c', ...inFlight, sent_at: '2026-11-24T12:05:00.000Z' }),
      held(2, 'B', inFlight),
      held(2, 'B', { run_id: 'run-b' }),
    ];
    expect(standing(items, proofs, after).size).toBe(0);
    // The same run's request again: its intent's request and time changed.
    const again = [held(1, 'A', { ...inFlight, req: 3 }), ...before.slice(1)];
    expect([...standing(items, proofs, again).keys()]).toEqual(['B']);
  });
});
