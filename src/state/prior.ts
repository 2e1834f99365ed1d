import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { PayoutRequest } from '../api/types.js';
import { lostContents, migrate, openDatabase, STATE_DB, type StateDb } from './db.js';
import { newerSchemaError, type StateError, stateError } from './errors.js';
import type { PriorRow } from '../domain/history.js';
import type { RunIntake } from './intake.js';
import { HASH_VERSION, serviceId } from './hash.js';
import type { StagedPayout } from './pg/history.js';
import { type PayoutRow, payoutOf } from './run-state.js';
import { MIGRATIONS } from './schema.js';

/** The staged rows of a send (state.db's payouts of its run), or of a dry run (its view). */
const STAGED = {
  send: { rows: 'main.payouts m', description: 'm.description', where: 'm.run = @run AND' },
  dryRun: { rows: 'main.staged m', description: 'NULL AS description', where: '' },
};

/**
 * What the runs of a service hold about the references of a run's staged rows: one indexed
 * lookup per row, on (reference_id, run), through the view `journal` of the schema `history`.
 */
function query(
  db: StateDb,
  staged: (typeof STAGED)['send'],
  history: string,
  params: { run: number; service: string },
): PriorRow[] {
  const rows = db
    .prepare(
      `SELECT m.row, m.reference_id, m.amount, m.currency, m.recipient, ${staged.description},
         r.run_id, r.client_id, o.hash, o.hash_version, o.state, o.req, o.sent_at,
         o.status, o.transaction_id, o.charges, o.message
       FROM ${staged.rows}
       JOIN ${history}.journal o ON o.reference_id = m.reference_id
       JOIN ${history}.runs r ON r.id = o.run
       WHERE ${staged.where} r.service_id = @service AND o.state IN ('in_flight', 'done', 'unknown')
       ORDER BY m.row, o.run`,
    )
    .all(params) as Array<PayoutRow & Omit<PriorRow, 'payout'>>;
  return rows.map((r) => ({
    row: r.row,
    payout: payoutOf(r),
    run_id: r.run_id,
    client_id: r.client_id,
    hash: r.hash,
    hash_version: r.hash_version,
    state: r.state,
    req: r.req,
    sent_at: r.sent_at,
    status: r.status,
    transaction_id: r.transaction_id,
    charges: r.charges,
    message: r.message,
  }));
}

/**
 * What the runs of a service hold about a run's staged references. A send's rows are in
 * state.db itself; a dry run's private database attaches the state folder's state.db for
 * reading only, when there is one (else nothing was ever sent from this folder).
 */
export function priorRows(intake: RunIntake, serviceKey: string, stateDir: string): PriorRow[] {
  const params = { run: intake.id, service: serviceId(serviceKey) };
  if (!intake.owned) {
    return sentBefore(intake.db, 'main', params.service)
      ? query(intake.db, STAGED.send, 'main', params)
      : [];
  }
  const { db } = intake;
  const path = join(stateDir, STATE_DB);
  if (!existsSync(path)) return [];
  const lost = lostContents(path, stateDir);
  // Databases are attached and detached outside a transaction.
  intake.finish();
  // A private database locks exclusively; state.db must stay open to other runs.
  db.exec('PRAGMA locking_mode = NORMAL');
  try {
    db.prepare('ATTACH DATABASE ? AS history').run(path);
    if (olderSchema(db)) {
      // An older file names its services otherwise: bring it up to date, as a send would.
      db.exec('DETACH DATABASE history');
      migrateFile(path, lost);
      db.prepare('ATTACH DATABASE ? AS history').run(path);
    }
  } catch (err) {
    throw stateError(err, path);
  }
  try {
    const { user_version: version } = db.prepare('PRAGMA history.user_version').get() as {
      user_version: number;
    };
    if (version > MIGRATIONS.length) throw newerSchemaError(path, version, MIGRATIONS.length);
    return sentBefore(db, 'history', params.service)
      ? query(db, STAGED.dryRun, 'history', params)
      : [];
  } catch (err) {
    // This private connection is not state.db's own: its errors are named here.
    throw stateError(err, path);
  } finally {
    db.exec('DETACH DATABASE history');
  }
}

/** The staged payouts of a send, in row order (to look them up at the service). */
export function stagedPayouts(intake: RunIntake): Array<{ row: number; payout: PayoutRequest }> {
  const rows = intake.db
    .prepare(
      `SELECT row, reference_id, amount, currency, recipient, description FROM payouts
       WHERE run = ? ORDER BY row`,
    )
    .all(intake.id) as PayoutRow[];
  return rows.map((r) => ({ row: r.row, payout: payoutOf(r) }));
}

/** Where staged rows of a send were read (file and location), with their references, by row. */
export function stagedLocations(
  intake: RunIntake,
  rows: number[],
): Map<number, { reference_id: string; file: string; location: string }> {
  const read = intake.db.prepare(
    'SELECT reference_id, file, location FROM payouts WHERE run = ? AND row = ?',
  );
  const out = new Map<number, { reference_id: string; file: string; location: string }>();
  for (const row of rows) {
    const r = read.get(intake.id, row) as
      | { reference_id: string; file: string | null; location: string | null }
      | undefined;
    if (r)
      out.set(row, {
        reference_id: r.reference_id,
        file: r.file ?? '',
        location: r.location ?? '',
      });
  }
  return out;
}

/** Whether state.db (of a send) holds any run of the service. */
export function hasHistory(intake: RunIntake, serviceKey: string): boolean {
  return sentBefore(intake.db, 'main', serviceId(serviceKey));
}

/** Whether the attached state.db is of an older schema than this version writes. */
function olderSchema(db: StateDb): boolean {
  const v = db.prepare('PRAGMA history.user_version').get() as { user_version: number };
  return v.user_version < MIGRATIONS.length;
}

/** Migrates a state.db file in place (see migrate); `lost` refuses one found empty. */
function migrateFile(path: string, lost: StateError | undefined): void {
  const file = openDatabase(path, { timeout: 30_000 });
  try {
    migrate(file, path, lost);
  } finally {
    file.close();
  }
}

/** Whether the schema holds a run of the service (a staged run has none yet): else nothing to look up. */
function sentBefore(db: StateDb, schema: string, service: string): boolean {
  return (
    db.prepare(`SELECT 1 FROM ${schema}.runs WHERE service_id = ? LIMIT 1`).get(service) !==
    undefined
  );
}

/** Payouts read per page from the staged rows. */
const STAGED_PAGE = 5_000;

/**
 * The staged rows of a run, a page at a time in row order: a send's from its payouts, a dry
 * run's from its view (which has no hash or description).
 */
export function* stagedPages(intake: RunIntake, pageRows = STAGED_PAGE): Generator<StagedPayout[]> {
  const sql = intake.owned
    ? `SELECT row, reference_id, file, line, location, amount, currency, recipient,
         NULL AS description, NULL AS hash, ${HASH_VERSION} AS hash_version
       FROM staged WHERE row >= ? ORDER BY row LIMIT ${pageRows}`
    : `SELECT row, reference_id, file, line, location, amount, currency, recipient, description,
         hash, hash_version
       FROM payouts WHERE run = ${intake.id} AND row >= ? ORDER BY row LIMIT ${pageRows}`;
  intake.finish();
  let from = 0;
  for (;;) {
    const page = intake.db.prepare(sql).all(from) as StagedPayout[];
    if (page.length) yield page;
    if (page.length < pageRows) return;
    from = page[page.length - 1]!.row + 1;
  }
}
