import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/state/db.js';
import { clientWorkFor, type Dialect, placeholders } from '../../src/state/dialect.js';
import { payoutHash, serviceId, sha256Hex16 } from '../../src/state/hash.js';
import { MIGRATIONS, PG_MIGRATIONS, STEPS } from '../../src/state/schema.js';
import { parseJsonStdout } from '../helpers/cli.js';
import { type LedgerService, ledgerPerTest, type Posted } from '../helpers/ledger-service.js';
import { FakeClock, type MainResult, runMain } from '../helpers/main.js';
import { freshDatabase, STORES, storeEnv, teamRoles } from '../helpers/pg.js';

// Issue 39 item 4 for the history and the lock: http://127.0.0.1:P and http://localhost:P/ are
// one service, whose runs a send finds and whose lock it takes, against a ledger that applies
// a payout again whenever it is posted again (its duplicate check off).

const fixture = ledgerPerTest();

interface Doc {
  success_count: number;
  sent_earlier_count: number;
}

/** A file of `n` payouts S-1..S-n in `dir`, and the payouts as posted. */
function payoutFile(dir: string, n: number): { file: string; payouts: Posted[] } {
  const payouts = Array.from({ length: n }, (_, i) => ({
    reference_id: `S-${i + 1}`,
    amount: i + 1.5,
    currency: 'EUR',
    recipient: `s${i + 1}@example.com`,
  }));
  const file = join(dir, 'run.csv');
  const rows = payouts.map((p) => `${p.reference_id},${p.amount},EUR,${p.recipient}`);
  writeFileSync(file, `reference_id,amount,currency,recipient\n${rows.join('\n')}\n`);
  return { file, payouts };
}

/** The other spelling of the ledger's base URL (http://127.0.0.1:P): localhost, a trailing /. */
const localhostOf = (svc: LedgerService) => `${svc.url.replace('127.0.0.1', 'localhost')}/`;

/** The schema version just before the step that files runs under their service's identity. */
function versionBefore(d: Dialect): number {
  return [...clientWorkFor(STEPS, d)].find(([, work]) => work === 'service_ids')![0];
}

/**
 * The statements with which a version before this step recorded `payouts` as sent to `raw`
 * (their run's service_id the id of the base URL as given), a run's id standing for `?run`.
 */
function oldRun(
  raw: string,
  payouts: Posted[],
): { run: [string, unknown[]]; rows: Array<[string, unknown[]]> } {
  const at = '2026-11-01T10:00:00.000Z';
  const run: [string, unknown[]] = [
    `INSERT INTO runs (run_id, service_id, service, client_id, inputs, input_hash, payout_count,
       created_at, updated_at) VALUES (?, ?, ?, 'client-1', '["old.csv"]', ?, ?, ?, ?) RETURNING id`,
    [sha256Hex16(`${raw}\nold`), serviceId(raw), raw, 'f'.repeat(64), payouts.length, at, at],
  ];
  const rows = payouts.flatMap((p, row): Array<[string, unknown[]]> => {
    const payout = { ...p, amount: String(p.amount) };
    const { reference_id: ref, currency, recipient } = p;
    return [
      [
        `INSERT INTO payouts (run, row, reference_id, file, line, location, amount, currency,
           recipient, hash, hash_version) VALUES (?, ?, ?, 'old.csv', ?, ?, ?, ?, ?, ?, 2)`,
        [
          row,
          ref,
          row + 2,
          `line ${row + 2}`,
          payout.amount,
          currency,
          recipient,
          payoutHash(payout),
        ],
      ],
      [
        `INSERT INTO intents (run, row, state, req, sent_at, updated_at)
           VALUES (?, ?, 'in_flight', 1, ?, ?)`,
        [row, at, at],
      ],
      // The last payout was in flight when that version stopped: no result recorded.
      ...(row === payouts.length - 1
        ? []
        : [
            [
              `INSERT INTO results (run, row, req, status, transaction_id, at)
                 VALUES (?, ?, 1, 'success', ?, ?)`,
              [row, `T-${ref}`, at],
            ] as [string, unknown[]],
          ]),
    ];
  });
  return { run, rows };
}

/** A state folder's state.db as a version before this step left it, holding `payouts` sent to `raw`. */
function oldStateDb(stateDir: string, raw: string, payouts: Posted[]): void {
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const db = openDatabase(join(stateDir, 'state.db'));
  db.function('sha256_16', (t) => sha256Hex16(String(t)));
  const version = versionBefore('sqlite');
  for (const step of MIGRATIONS.slice(0, version)) db.exec(step);
  db.exec(`PRAGMA user_version = ${version}`);
  const { run, rows } = oldRun(raw, payouts);
  const { id } = db.prepare(run[0]).get(...run[1]) as { id: number };
  for (const [sql, params] of rows) db.prepare(sql).run(id, ...params);
  db.close();
}

/** A shared history as a version before this step left it, holding `payouts` sent to `raw`. */
async function oldSharedHistory(url: string, raw: string, payouts: Posted[]): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const version = versionBefore('pg');
    for (const step of PG_MIGRATIONS.slice(0, version)) if (step) await c.query(step);
    await c.query('CREATE TABLE schema_version (version INTEGER NOT NULL)');
    await c.query('INSERT INTO schema_version VALUES ($1)', [version]);
    const { run, rows } = oldRun(raw, payouts);
    const r = await c.query<{ id: number }>(placeholders(run[0], 'pg'), run[1]);
    for (const [sql, params] of rows)
      await c.query(placeholders(sql, 'pg'), [r.rows[0]!.id, ...params]);
  } finally {
    await c.end();
  }
}

describe.each(STORES)('one service however its URL is spelled (%s)', (store) => {
  // A migrated history; the tests of one a version before left get a fresh one of their own.
  const withStore = storeEnv(store, { migrated: true });

  /** `payouts send FILE --yes --json` from `home` to the ledger at `baseUrl`. */
  const send = (
    svc: LedgerService,
    home: ReturnType<typeof fixture.home>,
    file: string,
    baseUrl: string,
    more: { url?: string; args?: string[] } = {},
  ): Promise<MainResult> => {
    const env = { ...withStore(svc.env(home.env)), PAYOUTS_BASE_URL: baseUrl };
    if (more.url) env.PAYOUTS_STATE_URL = more.url;
    const args = more.args ?? ['--yes', '--json'];
    return runMain(['send', file, ...args], { env, clock: new FakeClock() });
  };

  it('a file sent to 127.0.0.1, sent again to localhost/, is sent earlier: nothing goes', async () => {
    const svc = await fixture.start();
    const home = fixture.home();
    const { file } = payoutFile(home.dir, 6);
    const first = await send(svc, home, file, svc.url);
    expect(first.code).toBe(0);
    expect(svc.creates).toBeGreaterThan(0);
    const creates = svc.creates;
    const again = await send(svc, home, file, localhostOf(svc));
    expect(again.code).toBe(0);
    expect(parseJsonStdout<Doc>(again).sent_earlier_count).toBe(6);
    expect(svc.creates).toBe(creates);
    expect(svc.appliedTwice()).toEqual([]);
  });

  it('a history recorded under 127.0.0.1 before this version is the history of localhost/', async () => {
    const svc = await fixture.start();
    const home = fixture.home();
    const { file, payouts } = payoutFile(home.dir, 5);
    svc.apply(payouts);
    const url = store === 'postgres' ? await freshDatabase() : undefined;
    if (url === undefined) oldStateDb(join(home.env.XDG_STATE_HOME!, 'payouts'), svc.url, payouts);
    else await oldSharedHistory(url, svc.url, payouts);
    // A dry run, the first command after the upgrade, already sees them.
    const dry = await send(svc, home, file, localhostOf(svc), { url, args: ['--dry-run'] });
    expect(dry.code).toBe(0);
    expect(`${dry.stdout}${dry.stderr}`).toMatch(/sent earlier/i);
    const again = await send(svc, home, file, localhostOf(svc), { url });
    expect(again.code).toBe(0);
    const doc = parseJsonStdout<Doc>(again);
    // Four recorded sent; the one left in flight is read back and found, not sent again.
    expect(doc.success_count).toBe(5);
    expect(doc.sent_earlier_count).toBeGreaterThanOrEqual(4);
    expect(svc.gets).toBeGreaterThan(0);
    expect(svc.creates).toBe(0);
    expect(svc.appliedTwice()).toEqual([]);
  });

  it('a send to localhost/ waits for the lock of a send to 127.0.0.1: exit 8', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    let posted!: () => void;
    const inFlight = new Promise<void>((r) => {
      posted = r;
    });
    const svc = await fixture.start((n) => {
      if (n !== 1) return {};
      posted();
      return { hold: held };
    });
    const home = fixture.home();
    // On PostgreSQL, another machine: only the shared history's lock stands between them.
    const other = store === 'sqlite' ? home : fixture.home();
    const { file } = payoutFile(home.dir, 4);
    const { file: otherFile } = payoutFile(other.dir, 4);
    const first = send(svc, home, file, svc.url);
    await inFlight;
    const second = await send(svc, other, otherFile, localhostOf(svc));
    release();
    expect(second.code).toBe(8);
    expect(second.stderr).toMatch(/another payouts send to this service is running/);
    expect((await first).code).toBe(0);
    expect(svc.creates).toBe(1);
    expect(svc.appliedTwice()).toEqual([]);
  });

  if (store === 'postgres') {
    it("a person's role cannot update the history: exit 2, nothing sent, until its owner does", async () => {
      const svc = await fixture.start();
      const home = fixture.home();
      const { file, payouts } = payoutFile(home.dir, 3);
      svc.apply(payouts);
      const owner = await freshDatabase();
      await oldSharedHistory(owner, svc.url, payouts);
      const { ana } = await teamRoles(owner);
      const refused = await send(svc, home, file, localhostOf(svc), { url: ana });
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/needs its schema updated .* only the owner of its tables/);
      expect(svc.creates).toBe(0);
      const env = { ...svc.env(home.env), PAYOUTS_STATE_URL: owner };
      expect((await runMain(['runs'], { env, clock: new FakeClock() })).code).toBe(0);
      const again = await send(svc, home, file, localhostOf(svc), { url: ana });
      expect(again.code).toBe(0);
      expect(parseJsonStdout<Doc>(again).sent_earlier_count).toBe(3);
      expect(svc.creates).toBe(0);
      expect(svc.appliedTwice()).toEqual([]);
    });
  }
});
