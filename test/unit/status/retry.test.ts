import { describe, expect, it } from 'vitest';
import {
  backoffDelay,
  DEFAULT_READ_RETRY,
  type RetryPolicy,
  withRetry,
} from '../../../src/api/retry.js';
import {
  InterruptedError,
  InvalidCredentialsError,
  NetworkError,
  NotFoundError,
  RateLimitedError,
  ServiceError,
} from '../../../src/errors.js';

const policy: RetryPolicy = {
  maxAttempts: 4,
  baseDelayMs: 100,
  maxDelayMs: 1_000,
  maxTotalMs: 10_000,
  maxRetryAfterMs: 5_000,
};

/** A fake clock whose sleep only advances time, recording each wait. */
function fakeTime() {
  let t = 1_000_000;
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => t,
    sleep: async (ms: number) => {
      sleeps.push(ms);
      t += ms;
    },
  };
}

/** A function that fails with the given errors in turn, then returns "ok". */
function failing(...errors: unknown[]) {
  let calls = 0;
  const fn = async () => {
    const e = errors[calls];
    calls += 1;
    if (e !== undefined) throw e;
    return 'ok';
  };
  return { fn, calls: () => calls };
}

describe('withRetry', () => {
  it('returns at once when the first attempt succeeds', async () => {
    const time = fakeTime();
    const f = failing();
    await expect(withRetry(f.fn, policy, { ...time })).resolves.toBe('ok');
    expect(f.calls()).toBe(1);
    expect(time.sleeps).toEqual([]);
  });

  it('retries network errors, 5xx and 429, with full jitter under a doubling ceiling', async () => {
    const time = fakeTime();
    const f = failing(
      new NetworkError('refused', false, 'ECONNREFUSED'),
      new ServiceError('HTTP 500', { status: 500 }),
      new RateLimitedError('HTTP 429', { status: 429 }),
    );
    await expect(withRetry(f.fn, policy, { ...time, random: () => 0.5 })).resolves.toBe('ok');
    expect(f.calls()).toBe(4);
    // ceilings 100, 200, 400; random 0.5 picks half of each
    expect(time.sleeps).toEqual([50, 100, 200]);
  });

  it('caps the backoff ceiling at maxDelayMs', () => {
    expect(backoffDelay(policy, 10, () => 0.999999)).toBe(999);
    expect(backoffDelay(policy, 1, () => 0)).toBe(0);
  });

  it('honours Retry-After, capped by maxRetryAfterMs', async () => {
    const time = fakeTime();
    const f = failing(
      new RateLimitedError('HTTP 429', { status: 429, retryAfterMs: 3_000 }),
      new RateLimitedError('HTTP 429', { status: 429, retryAfterMs: 60_000 }),
    );
    await expect(withRetry(f.fn, policy, { ...time, random: () => 0 })).resolves.toBe('ok');
    expect(time.sleeps).toEqual([3_000, 5_000]);
  });

  it('gives up with the last error after maxAttempts', async () => {
    const time = fakeTime();
    const errors = [1, 2, 3, 4, 5].map((n) => new ServiceError(`HTTP 50${n}`, { status: 500 }));
    const f = failing(...errors);
    await expect(withRetry(f.fn, policy, { ...time, random: () => 1 - 1e-9 })).rejects.toBe(
      errors[3],
    );
    expect(f.calls()).toBe(4);
    expect(time.sleeps).toHaveLength(3);
  });

  it('gives up when the next wait would pass the total time budget', async () => {
    const time = fakeTime();
    const errors = [1, 2, 3].map(() => new RateLimitedError('429', { retryAfterMs: 4_000 }));
    const f = failing(...errors);
    const tight = { ...policy, maxTotalMs: 6_000 };
    await expect(withRetry(f.fn, tight, { ...time })).rejects.toBe(errors[1]);
    expect(time.sleeps).toEqual([4_000]);
  });

  it('does not retry errors that another attempt cannot fix', async () => {
    for (const error of [
      new InvalidCredentialsError('rejected', 401),
      new NotFoundError('ref-1'),
      new Error('bug'),
    ]) {
      const time = fakeTime();
      const f = failing(error);
      await expect(withRetry(f.fn, policy, { ...time })).rejects.toBe(error);
      expect(f.calls()).toBe(1);
    }
  });

  it('throws InterruptedError when the signal aborts during the wait', async () => {
    const controller = new AbortController();
    const f = failing(new ServiceError('HTTP 503', { status: 503 }));
    const sleep = (_ms: number, signal?: AbortSignal) =>
      new Promise<void>((_resolve, reject) => {
        signal?.addEventListener('abort', () => reject(new Error('aborted')));
        controller.abort();
      });
    await expect(
      withRetry(f.fn, policy, { signal: controller.signal, sleep }),
    ).rejects.toBeInstanceOf(InterruptedError);
    expect(f.calls()).toBe(1);
  });

  it('turns a failure caused by the abort into InterruptedError', async () => {
    const controller = new AbortController();
    const fn = async () => {
      controller.abort();
      throw new NetworkError('aborted', true, 'UND_ERR_ABORTED');
    };
    await expect(withRetry(fn, policy, { signal: controller.signal })).rejects.toBeInstanceOf(
      InterruptedError,
    );
  });

  it('uses real timers by default (a short wait passes)', async () => {
    const f = failing(new NetworkError('reset', true, 'ECONNRESET'));
    const quick = { ...DEFAULT_READ_RETRY, baseDelayMs: 5 };
    await expect(withRetry(f.fn, quick)).resolves.toBe('ok');
    expect(f.calls()).toBe(2);
  });
});
