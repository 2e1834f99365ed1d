import { appendFile, readFile, writeFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { type ScanHit, scanServiceJournals } from '../../../src/journal/index.js';
import { openRun, SERVICE, tempStateDir } from './helpers.js';

/** Every hit of a scan, sorted by run then ref for stable comparison. */
async function scan(
  stateDir: string,
  wants: (ref: string) => boolean,
  exceptRunId?: string,
  serviceKey = SERVICE,
): Promise<ScanHit[]> {
  const hits: ScanHit[] = [];
  await scanServiceJournals({
    stateDir,
    serviceKey,
    exceptRunId,
    wants,
    visit: (h) => hits.push(h),
  });
  return hits.sort((a, b) =>
    a.runId === b.runId ? a.ref.localeCompare(b.ref) : a.runId.localeCompare(b.runId),
  );
}

/** Three runs of SERVICE (one of them "current") and one run of another service. */
async function setup() {
  const stateDir = await tempStateDir();
  const run1 = await openRun(stateDir, 'input-1');
  await run1.recordIntent(1, [
    { ref: 'A', hash: 'ha' },
    { ref: 'B', hash: 'hb' },
    { ref: 'X', hash: 'hx' },
  ]);
  run1.recordOutcome(1, [{ ref: 'A', status: 'success', transaction_id: 'T-A' }]);
  run1.recordNotApplied(1, ['X'], '429');
  await run1.close();

  const run2 = await openRun(stateDir, 'input-2');
  await run2.recordIntent(1, [{ ref: 'C', hash: 'hc' }]);
  run2.recordOutcome(1, [{ ref: 'C', status: 'failed' }]);
  await run2.recordIntent(2, [{ ref: 'NOT-WANTED', hash: 'hn' }]);
  await run2.close();

  const current = await openRun(stateDir, 'input-3');
  await current.recordIntent(1, [{ ref: 'A', hash: 'ha' }]);
  await current.close();

  const other = await openRun(stateDir, 'input-1', { serviceKey: 'sandbox' });
  await other.recordIntent(1, [{ ref: 'A', hash: 'other' }]);
  await other.close();
  return { stateDir, run1, run2, current };
}

describe('scanServiceJournals', () => {
  it('finds wanted refs across runs, skipping the excluded run and other services', async () => {
    const { stateDir, run1, run2, current } = await setup();
    const wanted = new Set(['A', 'B', 'C', 'X', 'MISSING']);
    const hits = await scan(stateDir, (r) => wanted.has(r), current.runId);
    const expected: ScanHit[] = [
      {
        ref: 'A',
        runId: run1.runId,
        hash: 'ha',
        state: { state: 'confirmed', status: 'success', transaction_id: 'T-A', req: 1 },
      },
      {
        ref: 'B',
        runId: run1.runId,
        hash: 'hb',
        state: { state: 'in-flight', req: 1, hash: 'hb', at: expect.any(String) },
      },
      // Freed, but it was sent: the caller sees it and may ignore it.
      { ref: 'X', runId: run1.runId, hash: 'hx', state: { state: 'free' } },
      {
        ref: 'C',
        runId: run2.runId,
        hash: 'hc',
        state: { state: 'confirmed', status: 'failed', req: 1 },
      },
    ];
    expect(hits).toEqual(
      expected.sort((a, b) =>
        a.runId === b.runId ? a.ref.localeCompare(b.ref) : a.runId.localeCompare(b.runId),
      ),
    );
    expect(hits.some((h) => h.runId === current.runId)).toBe(false);
    expect(hits.some((h) => h.hash === 'other')).toBe(false);
    expect(hits.some((h) => h.ref === 'NOT-WANTED')).toBe(false);
  });

  it('includes the current run when nothing is excluded, and scans only the given service', async () => {
    const { stateDir, current } = await setup();
    const hits = await scan(stateDir, (r) => r === 'A');
    expect(hits.map((h) => h.runId).sort()).toContain(current.runId);
    expect(hits).toHaveLength(2);
    const sandbox = await scan(stateDir, (r) => r === 'A', undefined, 'sandbox');
    expect(sandbox).toHaveLength(1);
    expect(sandbox[0]?.hash).toBe('other');
  });

  it('asks only about refs the journals hold, and does nothing when there are none', async () => {
    const { stateDir } = await setup();
    const asked = new Set<string>();
    await scanServiceJournals({
      stateDir,
      serviceKey: SERVICE,
      wants: (r) => {
        asked.add(r);
        return false;
      },
      visit: () => {
        throw new Error('nothing is wanted');
      },
    });
    expect([...asked].sort()).toEqual(['A', 'B', 'C', 'NOT-WANTED', 'X']);
    const empty = await tempStateDir();
    await expect(scan(empty, () => true)).resolves.toEqual([]);
  });

  it('reports a ref confirmed by read-back without an intent, with no hash', async () => {
    const stateDir = await tempStateDir();
    const run = await openRun(stateDir, 'i');
    run.recordOutcome(-1, [{ ref: 'R', status: 'pending' }]);
    await run.close();
    const hits = await scan(stateDir, () => true);
    expect(hits).toEqual([
      { ref: 'R', runId: run.runId, state: { state: 'confirmed', status: 'pending', req: -1 } },
    ]);
    expect('hash' in (hits[0] ?? {})).toBe(false);
  });

  it('tolerates a torn last line in another run (it may be being written) without changing it', async () => {
    const { stateDir, run1, current } = await setup();
    await appendFile(run1.path, '{"t":"outc');
    const before = await readFile(run1.path, 'utf8');
    const hits = await scan(stateDir, (r) => r === 'B', current.runId);
    expect(hits).toHaveLength(1);
    expect(await readFile(run1.path, 'utf8')).toBe(before);
  });

  it('fails on a damaged journal, naming it', async () => {
    const { stateDir, run2 } = await setup();
    const text = await readFile(run2.path, 'utf8');
    await writeFile(run2.path, text.replace('"t":"outcome"', '"t":"outc'));
    await expect(scan(stateDir, () => true)).rejects.toThrow(`${run2.path} line 3`);
  });
});
