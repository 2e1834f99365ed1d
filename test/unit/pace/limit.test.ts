import { describe, expect, it } from 'vitest';
import { Pace } from '../../../src/core/pace.js';
import { SimClock } from '../../helpers/sim-clock.js';

/** A pace on a simulated clock, and a way to feed it answers of a given latency. */
function pace(initial: number, max: number) {
  const clock = new SimClock();
  const changes: string[] = [];
  const p = new Pace({ initial, max, clock, onChange: (l, why) => changes.push(`${l} ${why}`) });
  const answer = async (
    latencyMs: number,
    how: 'ok' | 'throttled' = 'ok',
    retryAfterMs?: number,
  ) => {
    const permit = await p.acquire();
    p.sending(permit);
    clock.t += latencyMs;
    p.answered(permit, how === 'ok' ? { kind: 'ok' } : { kind: 'throttled', retryAfterMs });
    p.release();
  };
  return { p, clock, changes, answer };
}

/**
 * Holds `n` places; the eleventh is answered 429 with ten others held (the limit comes down to
 * those ten), and a round later the others are answered.
 */
async function throttledAmongHeld(t: ReturnType<typeof pace>, n: number): Promise<void> {
  const { p, clock } = t;
  const permits = await Promise.all(Array.from({ length: n }, () => p.acquire()));
  for (const permit of permits) p.sending(permit);
  clock.t += 5;
  p.answered(permits[10]!, { kind: 'throttled' });
  expect(p.limit).toBe(10);
  clock.t += 250;
  for (const [i, permit] of permits.entries()) {
    if (i !== 10) p.answered(permit, { kind: 'ok' });
    p.release();
  }
}

describe('Pace: how the limit moves', () => {
  it('grows by two per answer in slow start, up to the cap', async () => {
    const { p, answer } = pace(4, 16);
    for (let i = 0; i < 3; i++) await answer(100);
    expect(p.limit).toBe(10);
    for (let i = 0; i < 20; i++) await answer(100);
    expect(p.limit).toBe(16);
    // The record is what was measured: one request at a time, however high the limit went.
    expect(p.record.peakConcurrency).toBe(1);
  });

  it('leaving slow start on a 429, comes down to what the service took at once', async () => {
    const { p, clock, changes } = pace(12, 16);
    const permits = await Promise.all(Array.from({ length: 12 }, () => p.acquire()));
    for (const permit of permits) p.sending(permit);
    clock.t += 5;
    // The 11th and 12th were refused: the service took 10 at once.
    p.answered(permits[10]!, { kind: 'throttled' });
    expect(p.limit).toBe(10);
    expect(changes.at(-1)).toMatch(/429/);
    p.answered(permits[11]!, { kind: 'throttled' });
    expect(p.limit).toBe(10);
    expect(p.record.throttled).toBe(2);
  });

  it('a 429 from before the decrease that left slow start lowers the limit to what was taken, by half at most', async () => {
    const { p, clock, changes } = pace(16, 16);
    const permits = await Promise.all(Array.from({ length: 16 }, () => p.acquire()));
    for (const permit of permits) p.sending(permit);
    clock.t += 5;
    p.answered(permits[12]!, { kind: 'throttled' });
    expect(p.limit).toBe(12);
    p.answered(permits[9]!, { kind: 'throttled' });
    expect(p.limit).toBe(9);
    expect(changes.at(-1)).toBe('9 the service took 9 at once');
    // But by half at most: the count may miss requests answered just before.
    p.answered(permits[5]!, { kind: 'throttled' });
    expect(p.limit).toBe(8);
    expect(changes.at(-1)).toBe('8 the service took 5 at once');
  });

  it('after slow start, a 429 keeps what the service held, shrinking by 0.8 at most, once per window', async () => {
    const t = pace(12, 16);
    const { p, answer } = t;
    await throttledAmongHeld(t, 12);
    // A window of answers later, one more in flight.
    expect(p.limit).toBe(11);
    // Refused with nothing else in flight: the 0.8 floor.
    await answer(100, 'throttled');
    expect(p.limit).toBe(8);
    // Within the window of that decrease, another 429 does not shrink it again.
    await answer(100, 'throttled');
    expect(p.limit).toBe(8);
  });

  it('a 429 with ten others held keeps ten, and then grows slowly back to eleven', async () => {
    const t = pace(11, 16);
    const { p, answer } = t;
    await throttledAmongHeld(t, 11);
    // Next to the limit of the last 429, a quarter of the usual pace: four windows.
    for (let i = 0; i < 20; i++) await answer(100);
    expect(p.limit).toBe(10);
    for (let i = 0; i < 20; i++) await answer(100);
    expect(p.limit).toBe(11);
  });

  it('after a 429, no request starts until an answer comes back', async () => {
    const { p, clock } = pace(4, 4);
    const permits = await Promise.all(Array.from({ length: 3 }, () => p.acquire()));
    for (const permit of permits) p.sending(permit);
    clock.t += 5;
    p.answered(permits[2]!, { kind: 'throttled' });
    p.release();
    let started = false;
    const next = p.acquire().then(() => {
      started = true;
    });
    await new Promise((r) => setImmediate(r));
    expect(started).toBe(false);
    clock.t += 100;
    p.answered(permits[0]!, { kind: 'ok' });
    p.release();
    await next;
    expect(started).toBe(true);
  });

  it('backs off when answers take clearly longer than the fastest seen', async () => {
    const { p, answer, changes } = pace(4, 4);
    for (let i = 0; i < 4; i++) await answer(100);
    for (let i = 0; i < 4; i++) await answer(400);
    expect(p.limit).toBe(2);
    expect(changes.at(-1)).toMatch(/answers slowed to 400 ms \(fastest 100 ms\)/);
  });

  it('with a fixed ceiling (--concurrency N), climbs back to N after backing off', async () => {
    const { p, answer } = pace(6, 6);
    await answer(50, 'throttled');
    expect(p.limit).toBe(3);
    for (let i = 0; i < 30; i++) await answer(50);
    expect(p.limit).toBe(6);
  });

  it('a 429 with Retry-After holds every new request until then when the service took none', async () => {
    const { p, clock, answer } = pace(4, 16);
    await answer(10, 'throttled', 2_000);
    const at = clock.t;
    const started = p.acquire().then((permit) => permit.startedAt);
    await clock.run(started);
    expect(await started).toBe(at + 2_000);
  });
  it('a 429 with Retry-After while the service takes requests holds new ones only until an answer', async () => {
    const { p, clock, answer } = pace(4, 16);
    await answer(100);
    await answer(10, 'throttled', 2_000);
    const at = clock.t;
    const started = p.acquire().then((permit) => permit.startedAt);
    await clock.run(started);
    expect(await started).toBe(at);
  });
});

describe('Pace: what a Retry-After holds', () => {
  it('a 429 to every request in flight holds every new one for its Retry-After', async () => {
    const { p, clock } = pace(3, 16);
    const permits = await Promise.all(Array.from({ length: 3 }, () => p.acquire()));
    for (const permit of permits) p.sending(permit);
    clock.t += 5;
    for (const permit of permits) {
      p.answered(permit, { kind: 'throttled', retryAfterMs: 2_000 });
      p.release();
    }
    const at = clock.t;
    const started = p.acquire().then((permit) => permit.startedAt);
    await clock.run(started);
    expect(await started).toBe(at + 2_000);
  });

  it('a 429 to the first request sent while later ones are held does not hold new ones past an answer', async () => {
    const { p, clock } = pace(3, 16);
    const permits = await Promise.all(Array.from({ length: 3 }, () => p.acquire()));
    for (const permit of permits) p.sending(permit);
    clock.t += 5;
    // The service took the second and third, and refused the first (it arrived last).
    p.answered(permits[0]!, { kind: 'throttled', retryAfterMs: 2_000 });
    p.release();
    clock.t += 95;
    p.answered(permits[1]!, { kind: 'ok' });
    p.release();
    const at = clock.t;
    const started = p.acquire().then((permit) => permit.startedAt);
    await clock.run(started);
    expect(await started).toBe(at);
  });
});

/** Sends `n` requests one after another through the pace, each answered after `latencyMs`. */
async function inTurn(t: ReturnType<typeof pace>, n: number, latencyMs: number): Promise<number[]> {
  const starts: number[] = [];
  const all = (async () => {
    for (let i = 0; i < n; i++) {
      const permit = await t.p.acquire();
      t.p.sending(permit);
      starts.push(permit.startedAt);
      await t.clock.sleep(latencyMs);
      t.p.answered(permit, { kind: 'ok' });
      t.p.release();
    }
  })();
  await t.clock.run(all);
  return starts;
}

/** One request through the pace, refused at once with a 429. */
async function refused(t: ReturnType<typeof pace>): Promise<void> {
  const done = (async () => {
    const permit = await t.p.acquire();
    t.p.sending(permit);
    await t.clock.sleep(10);
    t.p.answered(permit, { kind: 'throttled' });
    t.p.release();
  })();
  await t.clock.run(done);
}

describe('Pace: the rate the service allowed', () => {
  /** A pace that learned a rate: 19 requests taken between two 429s 1.9 s apart. */
  async function learned() {
    const t = pace(1, 16);
    await t.answer(10, 'throttled');
    await inTurn(t, 19, 100);
    await refused(t);
    return t;
  }

  it('after a 429 where the rate binds, keeps to what the service took since the last 429', async () => {
    const t = await learned();
    // 19 taken (and half of one, the unsent part of a token) in 1.91 s.
    expect(t.changes.at(-2)).toMatch(/^\d+ pacing at 10\.2 requests a second$/);
    const starts = await inTurn(t, 3, 10);
    expect(starts[1]! - starts[0]!).toBeCloseTo(1000 / 10.2, 0);
    expect(starts[2]! - starts[1]!).toBeCloseTo(1000 / 10.2, 0);
  });

  it('probes above the rate by one request a second after 5 s of clean answers, never by doubling', async () => {
    const t = await learned();
    const learnedAt = t.clock.t;
    await inTurn(t, 120, 10);
    const probes = t.changes.filter((c) => /probing/.test(c));
    expect(probes[0]).toMatch(/ probing at 11\.2 requests a second$/);
    expect(probes[1]).toMatch(/ probing at 12\.2 requests a second$/);
    // The first 5 s after the 429 went at 10.2 a second, the next 5 s at 11.2.
    expect(t.clock.t - learnedAt).toBeGreaterThan(10_000);
  });

  it('a refused probe brings the rate back and doubles the clean time before the next probe', async () => {
    const t = await learned();
    await inTurn(t, 55, 10);
    expect(t.changes.at(-1)).toMatch(/ probing at 11\.2 requests a second$/);
    await refused(t);
    const back = t.changes.filter((c) => /pacing/.test(c)).at(-1)!;
    expect(Number.parseFloat(back.split(' at ')[1]!)).toBeLessThan(11.2);
    const refusedAt = t.clock.t;
    // 100 more requests at about 10.5 a second: no probe for 10 s.
    const starts = await inTurn(t, 120, 10);
    const probeAt = starts.find((s, i) => i > 0 && s - starts[i - 1]! < 90);
    expect(probeAt! - refusedAt).toBeGreaterThanOrEqual(10_000);
  });
});
