import { describe, expect, it } from 'vitest';
import type { RetryPolicy } from '../../../src/api/retry.js';
import { checkStatuses, exitCodeForOutcomes } from '../../../src/core/status/check.js';
import type { LookupOutcome } from '../../../src/core/status/lookup.js';
import { renderStatus } from '../../../src/core/status/render.js';
import { fakeReader } from './fake-reader.js';
import { memoryOutput } from './output-helper.js';

const retry: RetryPolicy = {
  maxAttempts: 1,
  baseDelayMs: 1,
  maxDelayMs: 1,
  maxTotalMs: 1_000,
  maxRetryAfterMs: 1,
};

/** An outcome found with this status, or a not-found one for "missing". */
function o(status: string): LookupOutcome {
  if (status === 'missing') return { reference_id: status, kind: 'not_found' };
  return { reference_id: `po-${status}`, kind: 'found', record: { reference_id: status, status } };
}

/** A fake clock for --watch: sleeping advances it. */
function clock() {
  let t = 0;
  return {
    now: () => t,
    sleep: async (ms: number) => {
      t += ms;
    },
  };
}

describe('a status the interface does not document', () => {
  it.each([
    [['processing'], 5],
    [['success', 'processing'], 5],
    // The CLI's own names mean nothing in a service's answer: they are unknown statuses too.
    [['unknown'], 5],
    [['not_sent'], 5],
    [['processing', 'failed'], 4],
    [['processing', 'missing'], 6],
  ])('%j -> exit %i', (statuses, code) => {
    expect(exitCodeForOutcomes((statuses as string[]).map(o))).toBe(code);
  });

  it('is shown as it came, counted apart as unknown, exit 5; --json keeps it apart', async () => {
    const fake = fakeReader({ a: ['success'], b: ['processing'] });
    const human = memoryOutput();
    const report = await checkStatuses(
      fake.reader,
      { references: ['a', 'b'], concurrency: 2 },
      { output: human.output, retry },
    );
    expect(report.exitCode).toBe(5);
    await renderStatus(human.output, report, { single: false, watch: false });
    expect(human.stdout()).toMatch(/\nb\tprocessing\t/);
    expect(human.stderr()).toBe(
      '2 payouts: 1 succeeded, 0 failed, 0 canceled, 0 pending, 0 not found, 1 unknown status (processing)\n',
    );
    expect(human.stderr()).not.toMatch(/[1-9]\d* failed/);

    const json = memoryOutput({ json: true });
    await renderStatus(json.output, report, { single: false, watch: false });
    // --json's status is enumerated; the service's word is kept in service_status.
    expect(JSON.parse(json.stdout()).results[1]).toMatchObject({
      reference_id: 'b',
      status: 'undocumented',
      service_status: 'processing',
      record: { status: 'undocumented' },
    });
  });

  it('counts several unknown statuses together, naming them', async () => {
    const fake = fakeReader({ a: ['processing'], b: ['on_hold'], c: ['processing'] });
    const m = memoryOutput();
    const report = await checkStatuses(
      fake.reader,
      { references: ['a', 'b', 'c'], concurrency: 1 },
      { output: m.output, retry },
    );
    await renderStatus(m.output, report, { single: false, watch: false });
    expect(m.stderr()).toBe(
      '3 payouts: 0 succeeded, 0 failed, 0 canceled, 0 pending, 0 not found, 3 unknown statuses (processing, on_hold)\n',
    );
  });

  it('is not final: --watch keeps polling it until it becomes a documented final status', async () => {
    const fake = fakeReader({ a: ['processing', 'processing', 'success'] });
    const m = memoryOutput();
    const report = await checkStatuses(
      fake.reader,
      {
        references: ['a'],
        concurrency: 1,
        watch: { intervalMs: 1_000, maxIntervalMs: 1_000, timeoutMs: 60_000 },
      },
      { output: m.output, retry, ...clock() },
    );
    expect(fake.calls.get('a')).toBe(3);
    expect(report.exitCode).toBe(0);
    expect(m.stderr()).toMatch(/a: processing -> success\n/);
  });

  it('ends a watch that times out as still open, exit 5', async () => {
    const fake = fakeReader({ a: ['processing'] });
    const m = memoryOutput();
    const report = await checkStatuses(
      fake.reader,
      {
        references: ['a'],
        concurrency: 1,
        watch: { intervalMs: 1_000, maxIntervalMs: 1_000, timeoutMs: 3_000 },
      },
      { output: m.output, retry, ...clock() },
    );
    expect(report.timedOut).toBe(true);
    expect(report.exitCode).toBe(5);
    await renderStatus(m.output, report, { single: true, watch: false });
    expect(m.stderr()).toMatch(/not final yet: a$/m);
    expect(m.stdout()).toMatch(/Status +processing\n/);
  });
});
