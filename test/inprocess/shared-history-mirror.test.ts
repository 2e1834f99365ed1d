import { describe, expect, it } from 'vitest';
import { ledgerPerTest } from '../helpers/ledger-service.js';
import { FakeClock, runMain } from '../helpers/main.js';
import { query, recycledDatabase } from '../helpers/pg.js';
import { writeRun } from '../helpers/sandbox.js';
import { expectEveryRow, type SendDoc } from '../helpers/stopped-runs.js';

// Issue 34 item 3: a run on a shared history commits to its private local copy first and to
// PostgreSQL second. A mirror broken halfway (the local copy committed, PostgreSQL not) stops
// the run; the next run reads only PostgreSQL, and still pays each payout once.

const fixture = ledgerPerTest();

/** Makes PostgreSQL refuse, inside the run's commit, inserts into `table` that match `when`. */
async function refuse(url: string, table: string, when: string): Promise<void> {
  await query(
    url,
    `CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS
       $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$`,
  );
  await query(
    url,
    `CREATE TRIGGER refuse BEFORE INSERT ON ${table} FOR EACH ROW WHEN (${when})
       EXECUTE FUNCTION refuse()`,
  );
}

describe('a shared history whose mirror breaks halfway', () => {
  it.each([
    ['an intent', 'intents', 'NEW.req = 6'],
    ['the first results', 'results', 'true'],
  ])(
    'the local copy commits %s that PostgreSQL refuses: exit 7, and the next run pays each once',
    async (_, table, when) => {
      const url = await recycledDatabase();
      const svc = await fixture.start();
      const home = fixture.home();
      const { file, refs } = writeRun(home.dir, 20);
      const env = { ...svc.env(home.env), PAYOUTS_STATE_URL: url };
      expect((await runMain(['send', file, '--dry-run'], { env })).code).toBe(0);
      await refuse(url, table, when);
      const args = ['send', file, '--yes', '--json', '--chunk-size', '2', '--concurrency', '1'];
      const r = await runMain(args, { env, clock: new FakeClock() });
      expect(r.code, r.stderr).toBe(7);
      const doc = JSON.parse(r.stdout) as SendDoc;
      expectEveryRow(doc, refs);
      expect(doc.error!.message).toMatch(/refused by the test/);
      // Nothing went out without its intent in PostgreSQL, whatever the local copy holds.
      const held = [...svc.held.keys()];
      expect(held.length).toBeGreaterThan(0);
      expect(held.length).toBeLessThan(refs.length);
      const intents = await query<{ reference_id: string }>(
        url,
        "SELECT reference_id FROM journal WHERE state IN ('in_flight', 'done')",
      );
      const recorded = new Set(intents.map((i) => i.reference_id));
      expect(held.filter((ref) => !recorded.has(ref))).toEqual([]);
      // Dropped with its function, the history is as migrating made it, for another test.
      await query(url, `DROP TRIGGER refuse ON ${table}; DROP FUNCTION refuse()`);
      const again = await runMain(args, { env, clock: new FakeClock() });
      expect(again.code, again.stderr).toBe(0);
      expect([...svc.held.keys()].sort()).toEqual([...refs].sort());
      expect(svc.appliedTwice()).toEqual([]);
      const open = await query(url, "SELECT 1 FROM journal WHERE state != 'done'");
      expect(open).toEqual([]);
    },
    30_000,
  );
});
