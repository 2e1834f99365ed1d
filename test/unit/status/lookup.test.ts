import { describe, expect, it } from 'vitest';
import type { RetryPolicy } from '../../../src/api/retry.js';
import { lookupAll } from '../../../src/core/status/lookup.js';
import {
  ForbiddenError,
  InterruptedError,
  InvalidCredentialsError,
  NetworkError,
  RedirectError,
  ServiceError,
} from '../../../src/errors.js';
import { fakeReader } from './fake-reader.js';

const retry: RetryPolicy = {
  maxAttempts: 3,
  baseDelayMs: 1,
  maxDelayMs: 1,
  maxTotalMs: 1_000,
  maxRetryAfterMs: 1,
};
const noSleep = async () => {};

describe('lookupAll', () => {
  it('returns outcomes in the order of the references', async () => {
    const { reader } = fakeReader({ a: ['success'], b: ['missing'], c: ['failed'] }, 5);
    const out = await lookupAll(reader, ['c', 'b', 'a'], { concurrency: 3, retry, sleep: noSleep });
    expect(out.map((o) => [o.reference_id, o.kind])).toEqual([
      ['c', 'found'],
      ['b', 'not_found'],
      ['a', 'found'],
    ]);
  });

  it('keeps at most `concurrency` lookups in flight', async () => {
    const refs = Array.from({ length: 20 }, (_, i) => `r${i}`);
    const script = Object.fromEntries(refs.map((r) => [r, ['success']]));
    const fake = fakeReader(script, 5);
    await lookupAll(fake.reader, refs, { concurrency: 4, retry, sleep: noSleep });
    expect(fake.maxInFlight()).toBe(4);
    expect([...fake.calls.values()].every((n) => n === 1)).toBe(true);
  });

  it('retries a lookup that failed for a retryable reason', async () => {
    const fake = fakeReader({ a: [new ServiceError('HTTP 502', { status: 502 }), 'pending'] });
    const out = await lookupAll(fake.reader, ['a'], { concurrency: 1, retry, sleep: noSleep });
    expect(out[0]).toMatchObject({ kind: 'found', record: { status: 'pending' } });
    expect(fake.calls.get('a')).toBe(2);
  });

  it('reports a lookup that keeps failing as an error outcome, without stopping the others', async () => {
    const down = new NetworkError('could not reach', false, 'ECONNREFUSED');
    const redirect = new RedirectError('redirect to http://elsewhere/');
    const fake = fakeReader({ a: [down], b: ['success'], c: [redirect] });
    const out = await lookupAll(fake.reader, ['a', 'b', 'c'], {
      concurrency: 1,
      retry,
      sleep: noSleep,
    });
    expect(out.map((o) => o.kind)).toEqual(['error', 'found', 'error']);
    expect(fake.calls.get('a')).toBe(3);
    expect(fake.calls.get('c')).toBe(1);
  });

  it('stops everything at the first credentials error and throws it', async () => {
    const refs = Array.from({ length: 30 }, (_, i) => `r${i}`);
    const script = Object.fromEntries(refs.map((r) => [r, ['success'] as (string | Error)[]]));
    const rejected = new InvalidCredentialsError('rejected', 401);
    script.r3 = [rejected];
    const fake = fakeReader(script, 2);
    await expect(
      lookupAll(fake.reader, refs, { concurrency: 2, retry, sleep: noSleep }),
    ).rejects.toBe(rejected);
    expect(fake.calls.size).toBeLessThan(10);
  });

  it('treats a 403 like wrong credentials', async () => {
    const fake = fakeReader({ a: [new ForbiddenError('IP not allowed')] });
    await expect(lookupAll(fake.reader, ['a'], { concurrency: 1, retry })).rejects.toBeInstanceOf(
      ForbiddenError,
    );
  });

  it('throws InterruptedError when the signal aborts', async () => {
    const controller = new AbortController();
    const fake = fakeReader({ a: ['success'], b: ['success'] }, 50);
    setTimeout(() => controller.abort(), 10);
    await expect(
      lookupAll(fake.reader, ['a', 'b'], { concurrency: 1, retry, signal: controller.signal }),
    ).rejects.toBeInstanceOf(InterruptedError);
    expect(fake.calls.has('b')).toBe(false);
  });

  it('reports progress after every lookup', async () => {
    const fake = fakeReader({});
    const seen: string[] = [];
    await lookupAll(fake.reader, ['a', 'b'], {
      concurrency: 2,
      retry,
      onDone: (d, t) => seen.push(`${d}/${t}`),
    });
    expect(seen).toEqual(['1/2', '2/2']);
  });
});
