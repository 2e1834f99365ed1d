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
    clock.t += latencyMs;
    p.answered(permit, how === 'ok' ? { kind: 'ok' } : { kind: 'throttled', retryAfterMs });
    p.release();
  };
  return { p, clock, changes, answer };
}

describe('Pace: how the limit moves', () => {
  it('grows by two per answer in slow start, up to the cap', async () => {
    const { p, answer } = pace(4, 16);
    for (let i = 0; i < 3; i++) await answer(100);
    expect(p.limit).toBe(10);
    for (let i = 0; i < 20; i++) await answer(100);
    expect(p.limit).toBe(16);
    expect(p.record.peakConcurrency).toBe(16);
  });

  it('halves on the first 429, then grows by one per window of answers', async () => {
    const { p, answer, changes } = pace(16, 16);
    await answer(100, 'throttled');
    expect(p.limit).toBe(8);
    expect(changes.at(-1)).toMatch(/429/);
    for (let i = 0; i < 8; i++) await answer(100);
    expect(p.limit).toBe(8);
    await answer(100);
    expect(p.limit).toBe(9);
    expect(p.record.throttled).toBe(1);
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

  it('a 429 with Retry-After holds every new request until then', async () => {
    const { p, clock, answer } = pace(4, 16);
    await answer(10, 'throttled', 2_000);
    const at = clock.t;
    const started = p.acquire().then((permit) => permit.startedAt);
    await clock.run(started);
    expect(await started).toBe(at + 2_000);
  });
});
