import { describe, expect, it } from 'vitest';
import type { RetryPolicy } from '../../../src/api/retry.js';
import type { LookupOutcome } from '../../../src/core/status/lookup.js';
import { watchStatuses } from '../../../src/core/status/watch.js';
import { InterruptedError, InvalidCredentialsError, ServiceError } from '../../../src/errors.js';
import { fakeReader } from './fake-reader.js';

const retry: RetryPolicy = {
  maxAttempts: 1,
  baseDelayMs: 1,
  maxDelayMs: 1,
  maxTotalMs: 1_000,
  maxRetryAfterMs: 1,
};

/** A fake clock: pause() advances it and records each wait. */
function clock() {
  let t = 0;
  const waits: number[] = [];
  return {
    waits,
    now: () => t,
    pause: async (ms: number) => {
      waits.push(ms);
      t += ms;
    },
  };
}

const label = (o: LookupOutcome) => (o.kind === 'found' ? o.record.status : o.kind);

describe('watchStatuses', () => {
  it('polls until every payout is final, with waits growing x1.5 up to the ceiling', async () => {
    const c = clock();
    const fake = fakeReader({
      a: ['pending', 'pending', 'pending', 'pending', 'pending', 'success'],
      b: ['failed'],
      gone: ['missing'],
    });
    const changes: string[] = [];
    const result = await watchStatuses(fake.reader, ['a', 'b', 'gone'], {
      concurrency: 2,
      retry,
      intervalMs: 2_000,
      maxIntervalMs: 5_000,
      growth: 1.5,
      timeoutMs: 600_000,
      ...c,
      onChange: (o, prev) =>
        changes.push(`${o.reference_id}:${prev ? label(prev) : '-'}>${label(o)}`),
    });
    expect(result.timedOut).toBe(false);
    expect(result.outcomes.map(label)).toEqual(['success', 'failed', 'not_found']);
    expect(c.waits).toEqual([2_000, 3_000, 4_500, 5_000, 5_000]);
    // Settled references are not asked again.
    expect(fake.calls.get('b')).toBe(1);
    expect(fake.calls.get('gone')).toBe(1);
    expect(fake.calls.get('a')).toBe(6);
    expect(changes).toEqual(['a:->pending', 'b:->failed', 'gone:->not_found', 'a:pending>success']);
  });

  it('stops at the timeout with the last known state, never waiting past it', async () => {
    const c = clock();
    const fake = fakeReader({ a: ['pending'] });
    const result = await watchStatuses(fake.reader, ['a'], {
      concurrency: 1,
      retry,
      intervalMs: 2_000,
      maxIntervalMs: 30_000,
      growth: 1.5,
      timeoutMs: 6_000,
      ...c,
    });
    expect(result.timedOut).toBe(true);
    expect(result.outcomes.map(label)).toEqual(['pending']);
    expect(c.waits).toEqual([2_000, 3_000, 1_000]);
    expect(c.now()).toBe(6_000);
  });

  it('keeps the last known state through a failed poll and reports the failure', async () => {
    const c = clock();
    const fake = fakeReader({ a: ['pending', new ServiceError('HTTP 500'), 'success'] });
    const errors: string[] = [];
    const result = await watchStatuses(fake.reader, ['a'], {
      concurrency: 1,
      retry,
      intervalMs: 1_000,
      maxIntervalMs: 1_000,
      growth: 1.5,
      timeoutMs: 60_000,
      ...c,
      onPollError: (o) => errors.push(o.error.message),
    });
    expect(result.outcomes.map(label)).toEqual(['success']);
    expect(errors).toEqual(['HTTP 500']);
  });

  it('gives up at once on a credentials error', async () => {
    const fake = fakeReader({ a: ['pending', new InvalidCredentialsError('rejected', 401)] });
    await expect(
      watchStatuses(fake.reader, ['a'], {
        concurrency: 1,
        retry,
        intervalMs: 1,
        maxIntervalMs: 1,
        growth: 1.5,
        timeoutMs: 60_000,
        ...clock(),
      }),
    ).rejects.toBeInstanceOf(InvalidCredentialsError);
  });

  it('stops with InterruptedError when the signal aborts during a wait', async () => {
    const controller = new AbortController();
    const fake = fakeReader({ a: ['pending'] });
    setTimeout(() => controller.abort(), 20);
    // The real wait is an hour long: only the abort can end it within the test's time.
    await expect(
      watchStatuses(fake.reader, ['a'], {
        concurrency: 1,
        retry,
        intervalMs: 3_600_000,
        maxIntervalMs: 3_600_000,
        growth: 1.5,
        timeoutMs: 7_200_000,
        signal: controller.signal,
      }),
    ).rejects.toBeInstanceOf(InterruptedError);
  });
});
