import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HASH_VERSION_V1, payoutHashV1, runIdFor, serviceId } from '../../../src/state/hash.js';
import { listRuns, readRun } from '../../../src/state/index.js';
import { tempHome } from '../../helpers/cli.js';
import { runMain } from '../../helpers/main.js';
import { openDb } from './helpers.js';

const homes: Array<{ cleanup(): void }> = [];
afterEach(() => {
  for (const h of homes.splice(0)) h.cleanup();
});

const SAMPLE = join(import.meta.dirname, '..', '..', '..', 'samples', 'payouts.csv');

/** The sample's payouts: reference, amount, currency, recipient (it quotes nothing). */
function samplePayouts() {
  const lines = readFileSync(SAMPLE, 'utf8').trim().split('\n').slice(1);
  return lines.map((l) => {
    const [reference_id, amount, currency, recipient] = l.split(',') as [
      string,
      string,
      string,
      string,
    ];
    return { reference_id, amount, currency, recipient };
  });
}

/**
 * A v1 journal, as payouts 0.1 wrote it, of a run to the sandbox that sent every sample
 * payout but the last: all succeeded but the first, which is still in flight.
 */
function writeV1Journal(stateDir: string): { path: string; runId: string } {
  const payouts = samplePayouts().slice(0, -1);
  const inputHash = 'f'.repeat(64);
  const runId = runIdFor('sandbox', inputHash);
  const dir = join(stateDir, 'journals', serviceId('sandbox'));
  mkdirSync(dir, { recursive: true });
  const records = [
    {
      t: 'run',
      v: 1,
      run_id: runId,
      service: 'sandbox',
      client_id: 'sandbox',
      inputs: ['old.csv'],
      input_hash: inputHash,
      created_at: '2026-10-01T10:00:00.000Z',
      payout_count: payouts.length,
    },
    {
      t: 'intent',
      req: 1,
      at: '2026-10-01T10:00:01.000Z',
      p: payouts.map((p) => [p.reference_id, payoutHashV1(p)]),
    },
    {
      t: 'outcome',
      req: 1,
      at: '2026-10-01T10:00:02.000Z',
      r: payouts
        .slice(1)
        .map((p) => [p.reference_id, 'success', `T-${p.reference_id}`, 1, null, null, null]),
    },
  ];
  const path = join(dir, `${runId}.ndjson`);
  writeFileSync(path, records.map((r) => `${JSON.stringify(r)}\n`).join(''));
  return { path, runId };
}

describe('v1 journals', () => {
  it('are imported once at first use, left in place, and their payouts are sent earlier', async () => {
    const home = tempHome();
    homes.push(home);
    const stateDir = join(home.env.XDG_STATE_HOME!, 'payouts');
    const v1 = writeV1Journal(stateDir);
    const before = readFileSync(v1.path, 'utf8');

    const db = await openDb(stateDir);
    const runs = listRuns(db);
    expect(runs.map((r) => r.run_id)).toEqual([v1.runId]);
    expect(runs[0]!.counts).toMatchObject({ success: 10, in_flight: 1, not_sent: 0 });
    const detail = readRun(db, v1.runId);
    expect(detail.payouts[0]).toMatchObject({
      reference_id: 'PO-2026-11-0001',
      state: { state: 'in-flight', req: 1, at: '2026-10-01T10:00:01.000Z' },
    });
    const versions = db.prepare('SELECT DISTINCT hash_version AS v FROM payouts').all();
    expect(versions).toEqual([{ v: HASH_VERSION_V1 }]);
    const mark = db.prepare("SELECT value FROM meta WHERE key LIKE 'v1%'").all();
    expect(mark).toHaveLength(1);
    db.close();

    // The import ran: a journal written since is not read again.
    writeFileSync(join(v1.path, '..', 'later.ndjson'), before.replace(v1.runId, 'other-run'));
    const r = await runMain(['send', SAMPLE, '--sandbox', '--json'], { env: home.env });
    expect(r.stderr).toContain(
      'Reading back 1 payout whose earlier request has no recorded outcome',
    );
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as {
      sent_earlier_count: number;
      results: Array<{ reference_id: string; status: string; sent_earlier?: true }>;
    };
    // Ten confirmed by the journal; the one in flight was read back (not found: the sandbox
    // never had it) and sent, with the one the journal never named.
    expect(doc.sent_earlier_count).toBe(10);
    expect(doc.results.filter((x) => !x.sent_earlier).map((x) => x.reference_id)).toEqual([
      'PO-2026-11-0001',
      'PO-2026-11-0012',
    ]);
    expect(readFileSync(v1.path, 'utf8')).toBe(before);
    expect(existsSync(v1.path)).toBe(true);
    const after = await openDb(stateDir);
    expect(listRuns(after).map((x) => x.run_id)).not.toContain('other-run');
  });
});
