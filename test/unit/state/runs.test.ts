import { describe, expect, it } from 'vitest';
import { UsageError } from '../../../src/errors.js';
import { listRuns, readRun, runIdFor } from '../../../src/journal/index.js';
import { fakeClock, openRun, tempStateDir } from './helpers.js';

/** Two runs of one service and one of another, created a day apart each. */
async function setup() {
  const stateDir = await tempStateDir();
  const day = 86_400_000;
  const older = await openRun(stateDir, 'older', {
    count: 8,
    now: fakeClock(Date.UTC(2026, 0, 1)),
  });
  await older.recordIntent(1, [
    { ref: 'S1', hash: 'h' },
    { ref: 'S2', hash: 'h' },
    { ref: 'F1', hash: 'h' },
    { ref: 'C1', hash: 'h' },
    { ref: 'P1', hash: 'h' },
    { ref: 'IF', hash: 'h' },
    { ref: 'NA', hash: 'h' },
  ]);
  older.recordOutcome(1, [
    { ref: 'S1', status: 'success' },
    { ref: 'S2', status: 'success' },
    { ref: 'F1', status: 'failed' },
    { ref: 'C1', status: 'canceled' },
    { ref: 'P1', status: 'pending' },
  ]);
  older.recordNotApplied(1, ['NA'], '429');
  await older.close();

  const newer = await openRun(stateDir, 'newer', {
    count: 2,
    now: fakeClock(Date.UTC(2026, 0, 1) + day),
  });
  await newer.close();

  const sandbox = await openRun(stateDir, 'sandbox-run', {
    serviceKey: 'sandbox',
    count: 1,
    now: fakeClock(Date.UTC(2026, 0, 1) + 2 * day),
  });
  await sandbox.recordIntent(1, [{ ref: 'Z', hash: 'h' }]);
  sandbox.recordOutcome(1, [{ ref: 'Z', status: 'success' }]);
  await sandbox.close();
  return { stateDir, older, newer, sandbox };
}

describe('listRuns', () => {
  it('lists every run of every service, newest first, with counts', async () => {
    const { stateDir, older, newer, sandbox } = await setup();
    const runs = await listRuns(stateDir);
    expect(runs.map((r) => r.run_id)).toEqual([sandbox.runId, newer.runId, older.runId]);
    const o = runs[2]!;
    expect(o).toMatchObject({
      service: 'https://pay.example.com',
      client_id: 'abc-client-id',
      inputs: ['payouts.csv'],
      created_at: '2026-01-01T00:00:00.000Z',
      // header, intent, outcome, not_applied: the clock ticked 3 times after creation
      updated_at: '2026-01-01T00:00:03.000Z',
      payout_count: 8,
    });
    // 8 payouts: 7 sent, NA freed, one never sent -> not_sent 2.
    expect(o.counts).toEqual({
      success: 2,
      failed: 1,
      canceled: 1,
      pending: 1,
      in_flight: 1,
      not_sent: 2,
    });
    expect(runs[1]?.counts).toEqual({
      success: 0,
      failed: 0,
      canceled: 0,
      pending: 0,
      in_flight: 0,
      not_sent: 2,
    });
    expect(runs[1]?.updated_at).toBe(runs[1]?.created_at);
    expect(runs[0]?.counts.success).toBe(1);
  });

  it('is empty when nothing was journaled', async () => {
    expect(await listRuns(await tempStateDir())).toEqual([]);
  });
});

describe('readRun', () => {
  it('finds a run by a unique prefix, with each payout state', async () => {
    const { stateDir, older } = await setup();
    const run = await readRun(stateDir, older.runId.slice(0, 6).toUpperCase());
    expect(run.summary.run_id).toBe(older.runId);
    expect(run.summary.counts.success).toBe(2);
    expect(run.payouts.map((p) => p.reference_id)).toEqual([
      'S1',
      'S2',
      'F1',
      'C1',
      'P1',
      'IF',
      'NA',
    ]);
    expect(run.payouts.find((p) => p.reference_id === 'IF')?.state).toEqual({
      state: 'in-flight',
      req: 1,
      hash: 'h',
      at: expect.any(String),
    });
    expect(run.payouts.find((p) => p.reference_id === 'NA')?.state).toEqual({ state: 'free' });
    expect((await readRun(stateDir, older.runId)).summary.run_id).toBe(older.runId);
  });

  it('throws a UsageError when no run matches', async () => {
    const { stateDir } = await setup();
    const err = await readRun(stateDir, 'zzzz').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UsageError);
    expect((err as Error).message).toMatch(/no run id starts with "zzzz"/);
    await expect(readRun(stateDir, '../x')).rejects.toBeInstanceOf(UsageError);
    await expect(readRun(stateDir, '')).rejects.toBeInstanceOf(UsageError);
  });

  it('throws a UsageError naming the candidates when the prefix is ambiguous', async () => {
    const stateDir = await tempStateDir();
    // Find two input hashes whose run ids share a first character.
    const byFirst = new Map<string, string>();
    let pair: [string, string] | undefined;
    for (let i = 0; !pair; i++) {
      const id = runIdFor('https://pay.example.com abc-client-id', `in-${i}`);
      const seen = byFirst.get(id[0]!);
      if (seen) pair = [seen, `in-${i}`];
      else byFirst.set(id[0]!, `in-${i}`);
    }
    const a = await openRun(stateDir, pair[0]);
    const b = await openRun(stateDir, pair[1]);
    await a.close();
    await b.close();
    const err = await readRun(stateDir, a.runId[0]!).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UsageError);
    expect((err as Error).message).toContain(a.runId);
    expect((err as Error).message).toContain(b.runId);
    expect((err as Error).message).toMatch(/2 runs start with/);
  });
});
