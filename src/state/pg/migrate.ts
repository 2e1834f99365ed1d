/**
 * A shared history's schema brought up to date, apart from the session that then uses it: the
 * steps it has not seen, one migrator at a time, and only by the tables' owner.
 */
import type pg from 'pg';
import { PayoutsError, UsageError } from '../../errors.js';
import { clientWorkFor } from '../dialect.js';
import { PG_MIGRATIONS, STEPS } from '../schema.js';
import { LOCK_CLASS } from './service-lock.js';
import { maskPreparedWebhooks, rekeyServices } from './statements.js';

/** What this client does itself after a step of PG_MIGRATIONS, by its index. */
const PG_MIGRATION_WORK = clientWorkFor(STEPS, 'pg');

/** The second key of the lock that serialises migrations. */
const MIGRATION_LOCK = 0;

/** How a session runs work: after the work queued before it, or in one transaction. */
interface Session {
  serial<T>(doing: string, work: (c: pg.Client) => Promise<T>): Promise<T>;
  tx<T>(doing: string, work: (c: pg.Client) => Promise<T>): Promise<T>;
  /** The history as it may be shown. */
  where: string;
}

/**
 * Brings a new session's schema up to date: its name as the server gives it (payouts_session(),
 * which its attempts carry). One round trip when the schema is current, as it is for every
 * run but the first: the version and the name, two statements of one simple query. Otherwise
 * (no schema yet, an older one without payouts_session(), a newer one) it migrates first.
 */
export async function readySession(s: Session): Promise<string> {
  const both = 'SELECT version FROM schema_version; SELECT payouts_session() AS me';
  const read = await s.serial('reading its schema version', (c) =>
    c.query(both).then(
      (r) => r as unknown as Array<pg.QueryResult<{ version?: number; me?: string }>>,
      () => undefined,
    ),
  );
  const me = read?.[1]?.rows[0]?.me;
  if (read?.[0]?.rows[0]?.version === PG_MIGRATIONS.length && me !== undefined) return me;
  if ((await s.serial('reading its schema version', schemaVersion)) !== PG_MIGRATIONS.length) {
    await s.tx('updating its schema', (c) => migrateIn(c, s.where));
  }
  return s.serial('naming its session', sessionName);
}

/** The session's name as the server gives it (payouts_session()), which its attempts carry. */
export async function sessionName(c: pg.Client): Promise<string> {
  const r = await c.query<{ me: string }>('SELECT payouts_session() AS me');
  return r.rows[0]!.me;
}

/** The schema version the database holds (0: none yet). */
export async function schemaVersion(c: pg.Client): Promise<number> {
  try {
    const r = await c.query<{ version: number }>('SELECT version FROM schema_version');
    return r.rows[0]?.version ?? 0;
  } catch (err) {
    // undefined_table: a database payouts has not used yet.
    if ((err as { code?: string }).code === '42P01') return 0;
    throw err;
  }
}

/**
 * Applies the steps the database has not seen, in the caller's transaction; a role refused a
 * step's statement is told that only the tables' owner updates the schema. `where`: the
 * history as it may be shown.
 */
export function migrateIn(c: pg.Client, where: string): Promise<void> {
  return steps(c, where).catch((err) => ownersOnly(err, where));
}

/** A role refused a migration's statement: only the tables' owner updates the schema. */
function ownersOnly(err: unknown, where: string): never {
  const { code, message } = err as { code?: string; message?: string };
  if (code !== '42501' || message?.startsWith('payouts: ')) throw err;
  throw new UsageError(
    `the shared history at ${where} needs its schema updated for this version of payouts (${message}), which only the owner of its tables may do: run a payouts command once as that role (for instance payouts runs); nothing was changed`,
  );
}

/** migrateIn's steps. */
async function steps(c: pg.Client, where: string): Promise<void> {
  await c.query('SELECT pg_advisory_xact_lock($1, $2)', [LOCK_CLASS, MIGRATION_LOCK]);
  await c.query('CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)');
  const r = await c.query<{ version: number }>('SELECT version FROM schema_version');
  const current = r.rows[0]?.version ?? 0;
  if (current > PG_MIGRATIONS.length) {
    throw new PayoutsError(
      `the shared history at ${where} was written by a newer version of payouts (schema ${current}, this version knows ${PG_MIGRATIONS.length}); update payouts to use it`,
    );
  }
  for (let i = current; i < PG_MIGRATIONS.length; i++) {
    if (PG_MIGRATIONS[i] !== '') await c.query(PG_MIGRATIONS[i]!);
    // A history made now holds nothing an older version wrote.
    const work = current > 0 ? PG_MIGRATION_WORK.get(i) : undefined;
    if (work === 'service_ids') await rekeyServices(c);
    if (work === 'webhook_passwords') await maskPreparedWebhooks(c);
  }
  if (r.rows.length === 0) {
    await c.query('INSERT INTO schema_version (version) VALUES ($1)', [PG_MIGRATIONS.length]);
  } else await c.query('UPDATE schema_version SET version = $1', [PG_MIGRATIONS.length]);
}
