import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { lockWaitFor, migrate, openDatabase, openStateDb } from '../../../src/state/db.js';
import { sha256Hex16 } from '../../../src/state/hash.js';
import { MIGRATIONS } from '../../../src/state/schema.js';
import { payoutHash, priorRows, RunIntake, runIdFor, serviceId } from '../../../src/state/index.js';
import { openDb, payout, SERVICE, tempStateDir } from './helpers.js';

describe('state.db', () => {
  it('waits PAYOUTS_STATE_WAIT seconds for a lock: 2 s at most in silence, the rest told', () => {
    expect(lockWaitFor(undefined)).toEqual({ noticeMs: 2_000, waitMs: 28_000 });
    expect(lockWaitFor('60')).toEqual({ noticeMs: 2_000, waitMs: 58_000 });
    expect(lockWaitFor('1')).toEqual({ noticeMs: 500, waitMs: 500 });
    for (const bad of ['0', 'soon', '-1', '4000']) {
      expect(() => lockWaitFor(bad)).toThrow(/PAYOUTS_STATE_WAIT .*from 0\.1 to 3600/);
    }
  });

  it('is WAL, synced on every commit, at the latest schema version', async () => {
    const db = await openDb(await tempStateDir());
    expect(db.prepare('PRAGMA journal_mode').get()).toEqual({ journal_mode: 'wal' });
    // 2 is FULL: a commit is on disk when it returns.
    expect(db.prepare('PRAGMA synchronous').get()).toEqual({ synchronous: 2 });
    expect(db.prepare('PRAGMA user_version').get()).toEqual({ user_version: MIGRATIONS.length });
  });

  it('applies the steps a database has not seen, and refuses one of a newer version', async () => {
    const db = openDatabase('');
    migrate(db, 'x.db');
    migrate(db, 'x.db');
    expect(db.prepare('SELECT count(*) AS n FROM runs').get()).toEqual({ n: 0 });
    db.exec(`PRAGMA user_version = ${MIGRATIONS.length + 1}`);
    expect(() => migrate(db, 'x.db')).toThrow(/x\.db was written by a newer version of payouts/);
    const stateDir = await tempStateDir();
    const file = await openStateDb(stateDir);
    file.exec(`PRAGMA user_version = ${MIGRATIONS.length + 1}`);
    file.close();
    await expect(openStateDb(stateDir)).rejects.toThrow(join(stateDir, 'state.db'));
  });

  it('makes a new database at once, exactly as the steps make it', async () => {
    const master = (db: ReturnType<typeof openDatabase>) => ({
      objects: db
        .prepare('SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY rowid')
        .all(),
      version: db.prepare('PRAGMA user_version').get(),
    });
    const steps = openDatabase('');
    steps.function('sha256_16', (text) => sha256Hex16(String(text)));
    for (const m of MIGRATIONS) steps.exec(m);
    steps.exec(`PRAGMA user_version = ${MIGRATIONS.length}`);
    const once = openDatabase('');
    migrate(once, 'new.db');
    const file = await openStateDb(await tempStateDir());
    expect(master(once)).toEqual(master(steps));
    expect(master(file)).toEqual(master(steps));
  });

  it('moves schema 1 rows (one wide row per payout) into the narrow tables of schema 2', async () => {
    const stateDir = await tempStateDir();
    mkdirSync(stateDir, { recursive: true });
    const old = openDatabase(join(stateDir, 'state.db'));
    old.exec(MIGRATIONS[0]!);
    old.exec('PRAGMA user_version = 1');
    old.exec(`INSERT INTO meta VALUES ('v1-import', 'done');
      INSERT INTO runs (id, run_id, service_id, inputs, payout_count, last_req, created_at, updated_at)
        VALUES (1, 'r1', 's', '[]', 4, 3, 't0', 't1');
      INSERT INTO payouts (run, row, reference_id, amount, hash, hash_version, state, req, sent_at,
          status, transaction_id, note, outcome_status, outcome_message)
        VALUES (1, 0, 'Q', '1.00', 'h', 2, 'queued', NULL, NULL, NULL, NULL, NULL, NULL, NULL),
          (1, 1, 'F', '2.00', 'h', 2, 'in_flight', 2, 't2', NULL, NULL, NULL, 'unknown', 'cut'),
          (1, 2, 'D', '3.00', 'h', 2, 'done', 3, 't3', 'success', 'T-D', NULL, 'success', NULL),
          (1, 3, 'X', '4.00', 'h', 2, 'free', 1, 't1', NULL, NULL, 'HTTP 429', NULL, NULL);`);
    old.close();
    const db = await openDb(stateDir);
    const journal = db
      .prepare(
        'SELECT reference_id, amount, state, req, sent_at, status, transaction_id, note FROM journal ORDER BY row',
      )
      .all();
    expect(journal).toEqual([
      {
        reference_id: 'Q',
        amount: '1.00',
        state: 'queued',
        req: null,
        sent_at: null,
        status: null,
        transaction_id: null,
        note: null,
      },
      {
        reference_id: 'F',
        amount: '2.00',
        state: 'in_flight',
        req: 2,
        sent_at: 't2',
        status: null,
        transaction_id: null,
        note: null,
      },
      {
        reference_id: 'D',
        amount: '3.00',
        state: 'done',
        req: 3,
        sent_at: 't3',
        status: 'success',
        transaction_id: 'T-D',
        note: null,
      },
      {
        reference_id: 'X',
        amount: '4.00',
        state: 'free',
        req: 1,
        sent_at: 't1',
        status: null,
        transaction_id: null,
        note: 'HTTP 429',
      },
    ]);
    expect(db.prepare('SELECT row, status, message FROM reports ORDER BY row').all()).toEqual([
      { row: 1, status: 'unknown', message: 'cut' },
      { row: 2, status: 'success', message: null },
    ]);
    // The reference index is back: the cross-run lookup is one probe.
    const plan = db
      .prepare("EXPLAIN QUERY PLAN SELECT state FROM journal WHERE reference_id = 'D' AND run = 1")
      .all() as Array<{ detail: string }>;
    expect(plan.map((p) => p.detail).join('\n')).toMatch(/payouts_reference/);
  });

  it('moves schema 2 histories of base URL and Client-Id to one history per base URL', async () => {
    const stateDir = await tempStateDir();
    mkdirSync(stateDir, { recursive: true });
    const old = openDatabase(join(stateDir, 'state.db'));
    old.exec(MIGRATIONS[0]!);
    old.exec(MIGRATIONS[1]!);
    old.exec('PRAGMA user_version = 2');
    const input = 'b'.repeat(64);
    const keyA = `${SERVICE} key-a`;
    const keyB = `${SERVICE} key-b`;
    const run = old.prepare(
      `INSERT INTO runs (id, run_id, service_id, service, client_id, inputs, input_hash,
         payout_count, created_at, updated_at) VALUES (?, ?, ?, ?, ?, '[]', ?, 1, 't0', 't0')`,
    );
    // The same file sent under key A, then under key B; an older superseded run; the sandbox.
    run.run(1, runIdFor(keyA, input), serviceId(keyA), SERVICE, 'key-a', input);
    run.run(2, runIdFor(keyB, input), serviceId(keyB), SERVICE, 'key-b', input);
    run.run(3, `${runIdFor(keyA, 'c')}-3`, serviceId(keyA), SERVICE, 'key-a', 'c');
    run.run(4, runIdFor('sandbox', input), serviceId('sandbox'), 'sandbox', 'sandbox-id', input);
    const p = payout('R1');
    old
      .prepare(
        `INSERT INTO payouts (run, row, reference_id, amount, currency, recipient, hash, hash_version)
         VALUES (1, 0, 'R1', ?, ?, ?, ?, 2)`,
      )
      .run(p.amount, p.currency, p.recipient, payoutHash(p));
    old.exec(`INSERT INTO results VALUES (1, 0, 1, 'success', 'T-1', NULL, NULL, 't1')`);
    old.close();
    // A dry run, the first command after an upgrade, sees the migrated history too.
    const dry = RunIntake.scratch();
    dry.add({ ...p, file: 'x.csv', location: 'line 2', hash: payoutHash(p) });
    expect(priorRows(dry, SERVICE, stateDir).map((r) => r.client_id)).toEqual(['key-a']);
    dry.discard();
    const db = await openDb(stateDir);
    expect(db.prepare('SELECT id, run_id, service_id FROM runs ORDER BY id').all()).toEqual([
      { id: 1, run_id: `${runIdFor(SERVICE, input)}-1`, service_id: serviceId(SERVICE) },
      { id: 2, run_id: runIdFor(SERVICE, input), service_id: serviceId(SERVICE) },
      { id: 3, run_id: `${runIdFor(SERVICE, 'c')}-3`, service_id: serviceId(SERVICE) },
      { id: 4, run_id: runIdFor('sandbox', input), service_id: serviceId('sandbox') },
    ]);
    // A run under any key now finds what key A sent, and learns which key sent it.
    const rows = RunIntake.begin(db, { pid: 1, inputs: ['x.csv'], now: new Date() });
    rows.add({ ...p, file: 'x.csv', location: 'line 2', hash: payoutHash(p) });
    rows.finish();
    expect(priorRows(rows, SERVICE, stateDir).map((r) => [r.client_id, r.status])).toEqual([
      ['key-a', 'success'],
    ]);
  });

  it('keeps one statement per text for the life of the connection (none is ever freed)', () => {
    const db = openDatabase('');
    expect(db.prepare('SELECT 1')).toBe(db.prepare('SELECT 1'));
  });
});
