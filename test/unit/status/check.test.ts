import { describe, expect, it } from 'vitest';
import type { RetryPolicy } from '../../../src/api/retry.js';
import { checkStatuses, exitCodeForOutcomes } from '../../../src/core/status/check.js';
import type { LookupOutcome } from '../../../src/core/status/lookup.js';
import { parseStatusFlags } from '../../../src/core/status/options.js';
import {
  InvalidCredentialsError,
  NetworkError,
  RateLimitedError,
  UsageError,
} from '../../../src/errors.js';
import { fakeReader } from './fake-reader.js';
import { memoryOutput } from './output-helper.js';

const retry: RetryPolicy = {
  maxAttempts: 2,
  baseDelayMs: 1,
  maxDelayMs: 1,
  maxTotalMs: 1_000,
  maxRetryAfterMs: 1,
};
const noSleep = async () => {};

/** An outcome with a status, or a not-found / error outcome. */
function o(kind: string): LookupOutcome {
  if (kind === 'missing') return { reference_id: kind, kind: 'not_found' };
  if (kind === 'down')
    return { reference_id: kind, kind: 'error', error: new NetworkError('x', false) };
  return { reference_id: kind, kind: 'found', record: { reference_id: kind, status: kind } };
}

describe('exitCodeForOutcomes', () => {
  it.each([
    [['success', 'success'], 0],
    [['success', 'pending'], 5],
    [['pending', 'failed'], 4],
    [['canceled'], 4],
    [['failed', 'missing'], 6],
    [['missing', 'down', 'failed'], 7],
    [[], 0],
  ])('%j -> %i', (kinds, code) => {
    expect(exitCodeForOutcomes((kinds as string[]).map(o))).toBe(code);
  });
});

describe('checkStatuses', () => {
  it('looks up once and sums up the exit code', async () => {
    const fake = fakeReader({ a: ['success'], b: ['pending'] });
    const report = await checkStatuses(
      fake.reader,
      { references: ['a', 'b'], concurrency: 2 },
      { output: memoryOutput().output, retry, sleep: noSleep },
    );
    expect(report.exitCode).toBe(5);
    expect(report.outcomes.map((x) => x.reference_id)).toEqual(['a', 'b']);
  });

  it('gives the error as fatal when no lookup got an answer, so it is reported once', async () => {
    const down = new NetworkError('could not reach 127.0.0.1:9', false, 'ECONNREFUSED');
    const fake = fakeReader({ a: [down], b: [down] });
    const report = await checkStatuses(
      fake.reader,
      { references: ['a', 'b'], concurrency: 2 },
      { output: memoryOutput().output, retry, sleep: noSleep },
    );
    expect(report.fatal).toBe(down);
    expect(report.exitCode).toBe(7);
  });

  it('counts down each retry under a 429 on the live line, for several references', async () => {
    const limited = () => new RateLimitedError('HTTP 429', { status: 429, retryAfterMs: 1 });
    const fake = fakeReader({ a: [limited(), 'success'], b: [limited(), 'pending'] });
    const m = memoryOutput();
    const waits: Array<[string, number]> = [];
    let open = 0;
    m.output.progress = async () => ({
      update() {},
      wait: (what: string, ms: number) => {
        waits.push([what, ms]);
        open += 1;
        return () => {
          open -= 1;
        };
      },
      stop() {},
    });
    const report = await checkStatuses(
      fake.reader,
      { references: ['a', 'b'], concurrency: 2 },
      { output: m.output, retry, sleep: noSleep },
    );
    expect(report.exitCode).toBe(5);
    expect(waits).toEqual([
      ['the service asked to slow down (HTTP 429): next lookup in', 1],
      ['the service asked to slow down (HTTP 429): next lookup in', 1],
    ]);
    expect(open).toBe(0);
  });

  it('lets a credentials error through', async () => {
    const fake = fakeReader({ a: [new InvalidCredentialsError('rejected', 401)] });
    await expect(
      checkStatuses(
        fake.reader,
        { references: ['a'], concurrency: 1 },
        { output: memoryOutput().output, retry },
      ),
    ).rejects.toBeInstanceOf(InvalidCredentialsError);
  });

  it('logs each change on stderr while watching, in human mode only', async () => {
    const human = memoryOutput({ debug: true });
    let t = 0;
    const deps = {
      retry,
      now: () => t,
      sleep: async (ms: number) => {
        t += ms;
      },
    };
    const watch = { intervalMs: 1_000, maxIntervalMs: 1_000, timeoutMs: 60_000 };
    const report = await checkStatuses(
      fakeReader({ a: ['pending', 'success'] }).reader,
      { references: ['a'], concurrency: 1, watch },
      { ...deps, output: human.output },
    );
    expect(report.exitCode).toBe(0);
    expect(human.stderr()).toMatch(/a: pending\n/);
    expect(human.stderr()).toMatch(/a: pending -> success\n/);
    // Off a terminal, each wait between polls is one line as it starts (issue 33).
    expect(human.stderr()).toMatch(/1 payout not final yet: polling again in 1 s\n/);
    const json = memoryOutput({ json: true });
    await checkStatuses(
      fakeReader({ a: ['pending', 'success'] }).reader,
      { references: ['a'], concurrency: 1, watch },
      { ...deps, output: json.output },
    );
    expect(json.stderr()).toBe('');
  });
});

describe('parseStatusFlags', () => {
  it('applies the defaults', () => {
    expect(parseStatusFlags({})).toEqual({ concurrency: undefined });
    expect(parseStatusFlags({ watch: true })).toEqual({
      concurrency: undefined,
      watch: { intervalMs: 2_000, maxIntervalMs: 30_000, timeoutMs: 600_000 },
    });
  });

  it('reads seconds, fractions included', () => {
    expect(
      parseStatusFlags({ watch: true, interval: '0.5', timeout: '10', concurrency: '3' }),
    ).toEqual({
      concurrency: 3,
      watch: { intervalMs: 500, maxIntervalMs: 30_000, timeoutMs: 10_000 },
    });
  });

  it('refuses bad values and --interval without --watch', () => {
    for (const flags of [
      { concurrency: '0' },
      { concurrency: '2.5' },
      { concurrency: '33' },
      { watch: true, interval: 'abc' },
      { watch: true, timeout: '-1' },
      { interval: '5' },
    ]) {
      expect(() => parseStatusFlags(flags)).toThrow(UsageError);
    }
  });
});
