import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { serviceKeyOf } from '../../src/core/service.js';
import { serviceId } from '../../src/state/hash.js';
import { parseJsonStdout } from '../helpers/cli.js';
import { insiderTeam, sql } from '../helpers/insider.js';
import { ledgerPerTest } from '../helpers/ledger-service.js';
import { queryOne } from '../helpers/pg.js';

// Issue 47: an insider's forged `success` (plain SQL, an ordinary role granted every right on
// the history's tables) makes a send skip two of twenty payouts with exit 0. Nothing in the
// history can tell; the service can: `reconcile --run` finds them "not held by the service",
// loudly, and the history keeps that word, naming who recorded it.

const fixture = ledgerPerTest();

/** Twenty payouts, FG-01 to FG-20, 1.00 each. */
function monthFile(dir: string): { file: string; refs: string[] } {
  const refs = Array.from({ length: 20 }, (_, i) => `FG-${String(i + 1).padStart(2, '0')}`);
  const file = join(dir, 'dec.csv');
  const rows = refs.map((r) => `${r},1.00,EUR,${r.toLowerCase()}@ex.com`);
  writeFileSync(file, `reference_id,amount,currency,recipient\n${rows.join('\n')}\n`);
  return { file, refs };
}

describe('a forged success, against the service', () => {
  it('is found by reconcile --run as recorded as paid but not held by the service', async () => {
    const t = await insiderTeam(fixture, ['runs']);
    const s = t.schema;
    const { file, refs } = monthFile(t.home.dir);
    const service = serviceId(serviceKeyOf(t.svc.url));
    // ana records a run of her own holding FG-19 and FG-20 as paid: they never were.
    expect(
      await sql(
        t.ana,
        [
          `INSERT INTO ${s}.runs (run_id, service_id, service, client_id, inputs, input_hash,
             payout_count, created_at, updated_at)
           VALUES ('f0f0f0f0f0f0f0f0', $1, $2, 'client-1', '["dec.csv"]', 'x', 2,
             '2026-11-20T00:00:00.000Z', '2026-11-20T00:00:00.000Z')`,
          [service, t.svc.url],
        ],
        `INSERT INTO ${s}.payouts (run, row, reference_id, amount, currency, recipient, hash_version)
         SELECT id, n, 'FG-' || (19 + n), '1.00', 'EUR', 'fg-' || (19 + n) || '@ex.com', 2
         FROM ${s}.runs, generate_series(0, 1) n WHERE run_id = 'f0f0f0f0f0f0f0f0'`,
        `INSERT INTO ${s}.results (run, row, req, status, transaction_id, at)
         SELECT p.run, p.row, 1, 'success', 'tx-forged', '2026-11-20T00:00:00.000Z'
         FROM ${s}.payouts p JOIN ${s}.runs r ON r.id = p.run WHERE r.run_id = 'f0f0f0f0f0f0f0f0'`,
      ),
    ).toBe(undefined);
    // ci's send of the month skips them, and says all is well.
    const sent = await t.run(t.ci, ['send', file, '--yes', '--json']);
    expect(sent.code).toBe(0);
    expect(t.svc.held.size).toBe(18);
    expect(parseJsonStdout<{ sent_earlier_count: number }>(sent).sent_earlier_count).toBe(2);

    // bob reconciles the forged run: both are money the history says went.
    const found = await t.run(t.bob, ['reconcile', '--run', 'f0f0f0f0', '--json']);
    expect(found.code).toBe(4);
    const doc = parseJsonStdout<{
      counts: { not_held: number };
      results: Array<{ reference_id: string; standing: string; change: string | null }>;
    }>(found);
    expect(doc.counts.not_held).toBe(2);
    expect(doc.results.map((r) => [r.reference_id, r.standing, r.change])).toEqual([
      ['FG-19', 'not_held', 'not_held'],
      ['FG-20', 'not_held', 'not_held'],
    ]);
    const told = await t.run(t.bob, ['reconcile', '--run', 'f0f0f0f0']);
    expect(told.code).toBe(4);
    expect(told.stderr).toMatch(
      /error: recorded as paid but not held by the service: FG-19 \(run f0f0f0f0f0f0f0f0, EUR 1\.00 to fg-19@ex\.com\): the history says "success", the service answers "Payout not found"/,
    );
    // Every payout of the service, ci's real run too: only the two are not held.
    const all = await t.run(t.bob, ['reconcile', '--all', '--json']);
    const counts = parseJsonStdout<{ counts: Record<string, number> }>(all).counts;
    expect(counts).toMatchObject({ paid: 18, not_held: 2 });
    // runs show tells it on each payout, and in --json who kept it.
    const shown = await t.run(t.bob, ['runs', 'show', 'f0f0f0f0']);
    expect(shown.stdout).toMatch(
      /^FG-19\t.*success\t.*not held by the service when checked on .* UTC \(reconcile\)/m,
    );
    const json = parseJsonStdout<{
      payouts: Array<{ checked: { by: string; role: string; not_held: boolean } }>;
    }>(await t.run(t.bob, ['runs', 'show', 'f0f0f0f0', '--json']));
    expect(json.payouts[0]!.checked).toEqual(
      expect.objectContaining({ by: 'reconcile', role: t.roleOf(t.bob), not_held: true }),
    );
    // The word is kept, in bob's name, whatever he would have written.
    const kept = await queryOne<{ n: string; by: string }>(
      t.owner,
      `SELECT count(*) AS n, min(by_role) AS by FROM ${s}.checks WHERE held = 0`,
    );
    expect(Number(kept.n)).toBe(6);
    expect(kept.by).toBe(t.roleOf(t.bob));
    expect(refs).toHaveLength(20);
  });
});
