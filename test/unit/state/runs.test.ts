import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { showRunList } from '../../../src/core/runs/runs.js';
import { UsageError } from '../../../src/errors.js';
import {
  listRunsIn,
  readRunIn,
  type RowReader,
  runIdFor,
  type StateDb,
} from '../../../src/state/index.js';
import { memoryOutput } from '../status/output-helper.js';
import { fakeClock, openDb, openRun, rowsOf, SERVICE, tempStateDir } from './helpers.js';

/** state.db as the runs commands read it. */
function readerOf(db: StateDb): RowReader {
  return async (sql, params) => db.prepare(sql).all(...params);
}
const listRuns = (db: StateDb) => listRunsIn(readerOf(db));
const readRun = (db: StateDb, prefix: string) => readRunIn(readerOf(db), prefix);

/** Two runs of one service and one of another, created a day apart each. */
async function setup() {
  const stateDir = await tempStateDir();
  const db = await openDb(stateDir);
  const day = 86_400_000;
  const older = openRun(db, ['S1', 'S2', 'F1', 'C1', 'P1', 'IF', 'NA', 'Q'], {
    inputHash: 'older',
    now: fakeClock(Date.UTC(2026, 0, 1)),
  });
  await older.recordIntent(1, rowsOf(older, 'S1', 'S2', 'F1', 'C1', 'P1', 'IF', 'NA'));
  older.recordOutcome(1, [
    { ref: 'S1', status: 'success' },
    { ref: 'S2', status: 'success' },
    { ref: 'F1', status: 'failed' },
    { ref: 'C1', status: 'canceled' },
    { ref: 'P1', status: 'pending' },
  ]);
  older.recordNotApplied(1, ['NA'], '429');
  await older.close();

  const newer = openRun(db, ['N1', 'N2'], {
    inputHash: 'newer',
    now: fakeClock(Date.UTC(2026, 0, 1) + day),
  });
  await newer.close();

  const sandbox = openRun(db, ['Z'], {
    inputHash: 'sandbox-run',
    serviceKey: 'sandbox',
    now: fakeClock(Date.UTC(2026, 0, 1) + 2 * day),
  });
  await sandbox.recordIntent(1, rowsOf(sandbox, 'Z'));
  sandbox.recordOutcome(1, [{ ref: 'Z', status: 'success' }]);
  await sandbox.close();
  return { stateDir, db, older, newer, sandbox };
}

describe('listRuns', () => {
  it('lists every run of every service, newest first, with counts', async () => {
    const { db, older, newer, sandbox } = await setup();
    const runs = await listRuns(db);
    expect(runs.map((r) => r.run_id)).toEqual([sandbox.runId, newer.runId, older.runId]);
    const o = runs[2]!;
    expect(o).toMatchObject({
      service: 'https://pay.example.com',
      client_id: 'abc-client-id',
      inputs: ['payouts.csv'],
      created_at: '2026-01-01T00:00:00.000Z',
      updated_at: expect.stringMatching(/^2026-01-01T00:00:0\d\.000Z$/),
      payout_count: 8,
    });
    // 8 payouts: 7 sent, NA freed, one never sent -> not_sent 2.
    expect(o.counts).toEqual({
      success: 2,
      failed: 1,
      canceled: 1,
      pending: 1,
      in_flight: 1,
      sent_earlier: 0,
      not_sent: 2,
      paid_by_retry: 0,
    });
    expect(runs[1]?.counts).toEqual({
      success: 0,
      failed: 0,
      canceled: 0,
      pending: 0,
      in_flight: 0,
      sent_earlier: 0,
      not_sent: 2,
      paid_by_retry: 0,
    });
    expect(runs[0]?.counts.success).toBe(1);
  });

  it('is empty when nothing was sent, and creates no database to say so', async () => {
    const stateDir = await tempStateDir();
    const out = memoryOutput({ json: true });
    expect(await showRunList({ stateDir }, out.output)).toBe(0);
    expect(JSON.parse(out.stdout())).toEqual({
      runs: [],
      total_runs: 0,
      next_page: null,
      prepared_runs: [],
    });
    expect(existsSync(join(stateDir, 'state.db'))).toBe(false);
    expect(await listRuns(await openDb(stateDir))).toEqual([]);
  });
});

describe('readRun', () => {
  it('finds a run by a unique prefix, with each payout state', async () => {
    const { db, older } = await setup();
    const run = await readRun(db, older.runId.slice(0, 6).toUpperCase());
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
      'Q',
    ]);
    expect(run.payouts.find((p) => p.reference_id === 'IF')?.state).toEqual({
      state: 'in-flight',
      req: 1,
      hash: expect.stringMatching(/^[0-9a-f]{64}$/),
      at: expect.any(String),
    });
    expect(run.payouts.find((p) => p.reference_id === 'NA')?.state).toEqual({ state: 'free' });
    expect(run.payouts.find((p) => p.reference_id === 'Q')?.state).toEqual({ state: 'free' });
    expect(run.payouts.find((p) => p.reference_id === 'S1')?.state).toEqual({
      state: 'confirmed',
      req: 1,
      status: 'success',
    });
    expect((await readRun(db, older.runId)).summary.run_id).toBe(older.runId);
  });

  it('throws a UsageError when no run matches', async () => {
    const { db } = await setup();
    await expect(readRun(db, 'zzzz')).rejects.toThrow(UsageError);
    await expect(readRun(db, 'zzzz')).rejects.toThrow(/no run id starts with "zzzz"/);
    await expect(readRun(db, '../x')).rejects.toThrow(UsageError);
    await expect(readRun(db, '')).rejects.toThrow(UsageError);
  });

  it('throws a UsageError naming the candidates when the prefix is ambiguous', async () => {
    const db: StateDb = await openDb(await tempStateDir());
    // Find two input hashes whose run ids share a first character.
    const byFirst = new Map<string, string>();
    let pair: [string, string] | undefined;
    for (let i = 0; !pair; i++) {
      const id = runIdFor(SERVICE, `in-${i}`);
      const seen = byFirst.get(id[0]!);
      if (seen) pair = [seen, `in-${i}`];
      else byFirst.set(id[0]!, `in-${i}`);
    }
    const a = openRun(db, ['A'], { inputHash: pair[0] });
    const b = openRun(db, ['B'], { inputHash: pair[1] });
    const err = await readRun(db, a.runId[0]!).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UsageError);
    expect((err as Error).message).toContain(a.runId);
    expect((err as Error).message).toContain(b.runId);
    expect((err as Error).message).toMatch(/2 runs start with/);
  });
});
