import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { PayoutRequest } from '../api/types.js';
import { lostContents, migrate, openDatabase, STATE_DB, type StateDb } from './db.js';
import { newerSchemaError, type StateError, stateError } from './errors.js';
import { checkStateFolder } from './folder.js';
import type { PriorRow } from '../domain/history.js';
import type { RunIntake } from './intake.js';
import { HASH_VERSION, serviceId } from './hash.js';
import { type PayoutRow, payoutOf } from './run-state.js';
import { lookupSql } from './journal-sql.js';
import type { StagedPayout } from '../domain/records.js';
import { MIGRATIONS } from './schema.js';
import { type ChainHit, ChainWalk } from './chains.js';
import { paidRecipientsSql, recipientPages } from './recipients.js';

/** A journal row of an earlier run that holds one of the references looked up. */
export type PriorHit = ChainHit;

/**
 * The staged payouts of a page with what earlier runs hold of their references (`hits`, in
 * run order), in row order: both stores look a page's references up with lookupSql's query.
 */
export function priorOfPage(page: StagedPayout[], hits: PriorHit[], out: PriorRow[]): void {
  if (hits.length === 0) return;
  const byRef = new Map<string, PriorHit[]>();
  for (const h of hits) {
    const list = byRef.get(h.reference_id);
    if (list) list.push(h);
    else byRef.set(h.reference_id, [h]);
  }
  for (const p of page) {
    for (const { reference_id: _, ...h } of byRef.get(p.reference_id) ?? []) {
      out.push({ row: p.row, payout: payoutOf(p), ...h });
    }
  }
}

/** What the runs of a service in `schema` (state.db's main, or attached) hold of the staged rows. */
function query(intake: RunIntake, schema: string, service: string): PriorRow[] {
  const sql = lookupSql('sqlite', schema);
  if (intake.db.prepare(sql.hasRuns).get(service) === undefined) return [];
  const out: PriorRow[] = [];
  for (const page of stagedPages(intake)) {
    const refs = JSON.stringify(page.map((p) => p.reference_id));
    priorOfPage(page, intake.db.prepare(sql.prior).all(refs, service) as PriorHit[], out);
    const walk = new ChainWalk(page, out);
    for (let q = walk.next(); q; q = walk.next()) {
      walk.take(q, intake.db.prepare(sql[q.query]).all(q.refs, service) as ChainHit[]);
    }
  }
  return out;
}

/**
 * What the runs of a service hold about a run's staged references. A send's rows are in
 * state.db itself; a dry run's private database attaches the state folder's state.db for
 * reading only, when there is one (else nothing was ever sent from this folder).
 */
export function priorRows(intake: RunIntake, serviceKey: string, stateDir: string): PriorRow[] {
  const service = serviceId(serviceKey);
  return readHistory(intake, stateDir, (schema) => query(intake, schema, service)) ?? [];
}

/**
 * The recipients of `recipients` that runs of the service paid before (recipients.ts), read
 * where priorRows reads.
 */
export function paidRecipients(
  intake: RunIntake,
  serviceKey: string,
  stateDir: string,
  recipients: () => string[],
): Set<string> | null {
  const service = serviceId(serviceKey);
  const read = (schema: string) => {
    if (intake.db.prepare(lookupSql('sqlite', schema).hasRuns).get(service) === undefined) {
      return null;
    }
    const paid = new Set<string>();
    const sql = paidRecipientsSql('sqlite', schema);
    for (const page of recipientPages(recipients())) {
      for (const r of intake.db.prepare(sql).all(page, service) as Array<{ recipient: string }>)
        paid.add(r.recipient);
    }
    return paid;
  };
  return readHistory(intake, stateDir, read) ?? null;
}

/**
 * Whether this state folder's history was copied into a shared one (`state push` gave it an
 * id): its team shares a history since, where the approval rule lives. Read where priorRows reads.
 */
export function pushedHistory(intake: RunIntake, stateDir: string): boolean {
  const read = (schema: string) =>
    intake.db.prepare(`SELECT 1 FROM ${schema}.meta WHERE key = 'history_id'`).get() !== undefined;
  return readHistory(intake, stateDir, read) ?? false;
}

/** Where a run's staged rows are: a dry run's view, or the run's rows of payouts. */
function stagedFrom(intake: RunIntake): string {
  return intake.owned ? 'staged' : `payouts WHERE run = ${intake.id}`;
}

/** The distinct recipients of a run's staged rows. */
export function stagedRecipients(intake: RunIntake): string[] {
  intake.finish();
  const sql = `SELECT DISTINCT recipient FROM ${stagedFrom(intake)}`;
  return (intake.db.prepare(sql).all() as Array<{ recipient: string }>).map((r) => r.recipient);
}

/** The amounts of a run's staged rows to these recipients (given as a JSON array). */
export function stagedAmountsTo(
  intake: RunIntake,
  recipients: string,
): Array<{ currency: string; amount: string }> {
  const from = stagedFrom(intake);
  const where = `${from.includes('WHERE') ? ' AND' : ' WHERE'} recipient IN (SELECT value FROM json_each(?))`;
  return intake.db
    .prepare(`SELECT currency, amount FROM ${from}${where}`)
    .all(recipients) as Array<{
    currency: string;
    amount: string;
  }>;
}

/**
 * Runs `read` on the history of a send's rows: `main` when they are in state.db, else the
 * state folder's state.db attached read-only as `history` (undefined when there is none).
 */
export function readHistory<T>(
  intake: RunIntake,
  stateDir: string,
  read: (schema: string) => T,
): T | undefined {
  if (!intake.owned) return read('main');
  const { db } = intake;
  const path = join(stateDir, STATE_DB);
  if (!existsSync(path)) return undefined;
  checkStateFolder(stateDir);
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
    return read('history');
  } catch (err) {
    // This private connection is not state.db's own: its errors are named here.
    throw stateError(err, path);
  } finally {
    db.exec('DETACH DATABASE history');
  }
}

/**
 * The staged payouts of a send, in row order (to look them up at the service); a dry run's,
 * staged in its private database, without descriptions.
 */
export function stagedPayouts(intake: RunIntake): Array<{ row: number; payout: PayoutRequest }> {
  if (intake.owned)
    return [...stagedPages(intake)].flat().map((r) => ({ row: r.row, payout: payoutOf(r) }));
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
  // A dry run's rows are its private database's view (stagedFrom), a send's the run's payouts.
  const from = stagedFrom(intake);
  const where = `${from.includes('WHERE') ? ' AND' : ' WHERE'} row = ?`;
  const read = intake.db.prepare(`SELECT reference_id, file, location FROM ${from}${where}`);
  const out = new Map<number, { reference_id: string; file: string; location: string }>();
  for (const row of rows) {
    const r = read.get(row) as
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
  return (
    intake.db.prepare(lookupSql('sqlite', 'main').hasRuns).get(serviceId(serviceKey)) !== undefined
  );
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

/** Payouts read per page from the staged rows. */
const STAGED_PAGE = 5_000;

/**
 * The staged rows of a run, a page at a time in row order: a send's from its payouts, a dry
 * run's from its view (which has no hash or description).
 */
export function* stagedPages(intake: RunIntake, pageRows = STAGED_PAGE): Generator<StagedPayout[]> {
  const sql = intake.owned
    ? `SELECT row, reference_id, file, line, location, amount, currency, recipient,
         NULL AS description, NULL AS hash, ${HASH_VERSION} AS hash_version, retry_of
       FROM staged WHERE row >= ? ORDER BY row LIMIT ${pageRows}`
    : `SELECT row, reference_id, file, line, location, amount, currency, recipient, description,
         hash, hash_version, retry_of
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

/** A staged row sent under a retry file's new_reference_id, with the reference it retries. */
export interface StagedRetry {
  row: number;
  reference_id: string;
  retry_of: string;
  file: string;
  location: string;
  /** Where the run itself holds the reference it retries as a payout of its own, if it does. */
  alsoSent?: { file: string; location: string };
}

/** The staged rows of a run that retry another reference, in row order (a dry run's too). */
export function stagedRetries(intake: RunIntake): StagedRetry[] {
  if (!intake.retryCount) return [];
  const table = intake.owned ? 'staged s' : 'payouts s';
  const mine = intake.owned ? '1 = 1' : `s.run = ${intake.id}`;
  intake.finish();
  const rows = intake.db
    .prepare(
      `SELECT s.row, s.reference_id, s.retry_of, s.file, s.location FROM ${table}
       WHERE ${mine} AND s.retry_of IS NOT NULL ORDER BY s.row`,
    )
    .all() as StagedRetry[];
  if (!rows.length) return rows;
  // The originals this run sends itself as well (a file that pays and retries one payout).
  const own = intake.db
    .prepare(
      `SELECT s.reference_id, s.file, s.location FROM ${table}
       WHERE ${mine} AND s.reference_id IN (SELECT value FROM json_each(?))`,
    )
    .all(JSON.stringify(rows.map((r) => r.retry_of))) as Array<{
    reference_id: string;
    file: string;
    location: string;
  }>;
  const places = new Map(own.map((o) => [o.reference_id, o]));
  for (const r of rows) {
    const at = places.get(r.retry_of);
    if (at !== undefined) r.alsoSent = at;
  }
  return rows;
}
