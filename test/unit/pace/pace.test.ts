import { describe, expect, it } from 'vitest';
import { type Answered, Pace } from '../../../src/core/pace.js';
import { concurrencyOf } from '../../../src/core/send/options.js';
import { SimClock } from '../../helpers/sim-clock.js';

/** A simulated service: answers after `latencyMs`, or 429 when its limit is exceeded. */
interface Model {
  latencyMs: number;
  /** Requests in flight beyond which it answers 429. */
  cap?: number;
  /** A token bucket: requests a second and burst; 429 without Retry-After, as API gateways answer. */
  bucket?: { rate: number; burst: number };
  /** The Retry-After of its 429s, if it sends one. */
  retryAfterMs?: number;
}

/** What a send starts with by default, and with --concurrency 16. */
const DEFAULT = concurrencyOf({ maxConcurrency: 16 });
const FIXED_16 = concurrencyOf({ concurrency: 16, maxConcurrency: 16 });

/** A seeded pseudo-random source in [0, 1): the same jitter every run. */
function lcg(seed: number): () => number {
  let x = seed;
  return () => {
    x = (x * 1_103_515_245 + 12_345) % 2 ** 31;
    return x / 2 ** 31;
  };
}

/** Sends `n` requests through a pace against a model: wall time over the ideal, and the share of 429s (overall, and after the first second). */
async function simulate(model: Model, n: number, pace: { initial: number; max: number }) {
  const clock = new SimClock();
  const random = lcg(19);
  const changes: string[] = [];
  const p = new Pace({
    ...pace,
    clock,
    onChange: (l, why) => changes.push(`${l}: ${why} (at ${Math.round(clock.t)} ms)`),
  });
  let inFlight = 0;
  let tokens = model.bucket?.burst ?? 0;
  let refilledAt = 0;
  let requests = 0;
  let throttled = 0;
  /** Requests and 429s after the first second: the steady state. */
  let steadyRequests = 0;
  let steadyThrottled = 0;
  const call = async (): Promise<Answered> => {
    requests += 1;
    if (clock.t >= 1000) steadyRequests += 1;
    const throttle = (): Answered => {
      throttled += 1;

      if (clock.t >= 1000) steadyThrottled += 1;
      return { kind: 'throttled', retryAfterMs: model.retryAfterMs };
    };
    if (model.bucket) {
      tokens = Math.min(
        model.bucket.burst,
        tokens + ((clock.t - refilledAt) * model.bucket.rate) / 1000,
      );
      refilledAt = clock.t;
      if (tokens < 1) {
        await clock.sleep(5);
        return throttle();
      }
      tokens -= 1;
    }
    if (model.cap !== undefined && inFlight >= model.cap) {
      await clock.sleep(5);
      return throttle();
    }
    inFlight += 1;
    await clock.sleep(model.latencyMs);
    inFlight -= 1;
    return { kind: 'ok' };
  };
  const one = async () => {
    const permit = await p.acquire();
    let attempt = 0;
    try {
      for (;;) {
        p.sending(permit);
        const how = await call();
        p.answered(permit, how);
        if (how.kind === 'ok') return;
        // As the engine does: a Retry-After, else a backoff with full jitter (250 ms at first).
        const backoff = Math.floor(random() * 250 * 2 ** Math.min(attempt++, 5));
        const wait = how.kind === 'throttled' ? how.retryAfterMs : undefined;
        await p.again(permit, clock.sleep(wait ?? backoff));
      }
    } finally {
      p.release();
    }
  };
  const all = Promise.all(Array.from({ length: n }, one));
  await clock.run(all);
  const ideal = model.bucket
    ? (n / model.bucket.rate) * 1000
    : (n * model.latencyMs) / Math.min(model.cap ?? pace.max, pace.max);
  const share = steadyThrottled / Math.max(1, steadyRequests);
  changes.push(
    `ratio ${(clock.t / ideal).toFixed(3)}, 429s ${((throttled / requests) * 100).toFixed(1)}% (steady ${(share * 100).toFixed(1)}%)`,
  );
  if (process.env.PACE_DEBUG) console.log(changes.join('\n'));
  return {
    ratio: clock.t / ideal,
    share,
    overall: throttled / requests,
    throttled,
    steadyThrottled,
    record: p.record,
    changes,
  };
}

describe('Pace against simulated services (200 requests)', () => {
  for (const flags of [
    { name: 'default', ...DEFAULT },
    { name: '--concurrency 16', ...FIXED_16 },
  ]) {
    it(`${flags.name}: a token bucket of 20/s (burst 5), 100 ms: within 1.15x, at most 10% 429s`, async () => {
      const r = await simulate({ latencyMs: 100, bucket: { rate: 20, burst: 5 } }, 200, flags);
      expect(r.ratio, r.changes.join('\n')).toBeLessThanOrEqual(1.15);
      expect(r.overall, r.changes.join('\n')).toBeLessThanOrEqual(0.1);
      expect(r.share, r.changes.join('\n')).toBeLessThanOrEqual(0.05);
    });

    it(`${flags.name}: at most 16 in flight, 250 ms: within 1.15x, no 429`, async () => {
      const r = await simulate({ latencyMs: 250, cap: 16 }, 200, flags);
      expect(r.ratio, r.changes.join('\n')).toBeLessThanOrEqual(1.15);
      expect(r.overall).toBe(0);
    });

    it(`${flags.name}: at most 10 in flight, 250 ms: within 1.1x, at most 10% 429s`, async () => {
      const r = await simulate({ latencyMs: 250, cap: 10 }, 200, flags);
      expect(r.ratio, r.changes.join('\n')).toBeLessThanOrEqual(1.1);
      expect(r.overall, r.changes.join('\n')).toBeLessThanOrEqual(0.1);
      // The limit never falls far below the 10 the service takes (halving took it to 6).
      const lows = r.changes
        .filter((c) => /answered 429/.test(c))
        .map((c) => Number.parseInt(c, 10));
      expect(Math.min(...lows), r.changes.join('\n')).toBeGreaterThanOrEqual(8);
    });

    it(`${flags.name}: no limit, 300 ms: reaches 16 in flight, within 1.15x`, async () => {
      const r = await simulate({ latencyMs: 300 }, 200, flags);
      expect(r.ratio).toBeLessThanOrEqual(1.15);
      expect(r.record.peakConcurrency).toBe(16);
    });
  }
});

describe('Pace against a token bucket that answers Retry-After: 1 (20/s, burst 5, 100 ms)', () => {
  const model = { latencyMs: 100, bucket: { rate: 20, burst: 5 }, retryAfterMs: 1_000 };

  it('default: 200 requests see at most 5 429s, within 1.15x', async () => {
    const r = await simulate(model, 200, DEFAULT);
    expect(r.throttled, r.changes.join('\n')).toBeLessThanOrEqual(5);
    expect(r.ratio, r.changes.join('\n')).toBeLessThanOrEqual(1.15);
  });

  it('--concurrency 16: the first round meets the burst; at most 2 429s after it', async () => {
    const r = await simulate(model, 200, FIXED_16);
    expect(r.overall, r.changes.join('\n')).toBeLessThanOrEqual(0.1);
    expect(r.steadyThrottled, r.changes.join('\n')).toBeLessThanOrEqual(2);
    expect(r.ratio, r.changes.join('\n')).toBeLessThanOrEqual(1.15);
  });

  it('a minute of requests at its rate: a few 429s after the first second', async () => {
    const r = await simulate(model, 1200, DEFAULT);
    expect(r.steadyThrottled, r.changes.join('\n')).toBeLessThanOrEqual(5);
    expect(r.ratio, r.changes.join('\n')).toBeLessThanOrEqual(1.05);
  });
});

describe('Pace: the ramp on a service without limits (issue 33)', () => {
  /** Sends `n` requests of `latencyMs` from `initial` in flight: when 16 were first in flight. */
  async function ramp(initial: number, latencyMs: number, n: number) {
    const clock = new SimClock();
    const p = new Pace({ initial, max: 16, clock });
    let reached: number | undefined;
    const one = async () => {
      const permit = await p.acquire();
      p.sending(permit);
      if (p.inFlight >= 16) reached ??= clock.t;
      await clock.sleep(latencyMs);
      p.answered(permit, { kind: 'ok' });
      p.done(permit);
    };
    await clock.run(Promise.all(Array.from({ length: n }, one)));
    return reached;
  }

  it('from 1 in flight, reaches 16 within 4 round trips', async () => {
    const at = await ramp(1, 100, 100);
    expect(at).toBeDefined();
    expect(at!).toBeLessThanOrEqual(4 * 100);
  });

  it('from the default start of 8, the second round trip carries 16', async () => {
    const at = await ramp(DEFAULT.initial, 250, 100);
    expect(DEFAULT.initial).toBe(8);
    expect(at).toBeDefined();
    expect(at!).toBeLessThanOrEqual(250);
  });

  it('a 503 ends the ramp and shrinks the limit, as a queue building does', async () => {
    const clock = new SimClock();
    const changes: string[] = [];
    const p = new Pace({
      initial: 8,
      max: 16,
      clock,
      onChange: (l, why) => changes.push(`${l} ${why}`),
    });
    const permits = await Promise.all(Array.from({ length: 8 }, () => p.acquire()));
    for (const permit of permits) p.sending(permit);
    clock.t += 100;
    p.answered(permits[0]!, { kind: 'overloaded' });
    expect(p.limit).toBe(4);
    expect(changes.at(-1)).toBe('4 the service answered 503 (overloaded)');
    // Out of slow start: clean answers grow it by one a window, not by two an answer.
    for (const permit of permits.slice(1)) p.answered(permit, { kind: 'ok' });
    expect(p.limit).toBeLessThanOrEqual(6);
  });
});
