/**
 * The statements only a shared history makes: a run's header and payouts written in (arrays
 * through unnest, a statement a page), and a commit's records as one statement.
 */
import type pg from 'pg';
import { placeholders } from '../dialect.js';
import { serviceIdOf } from '../hash.js';
import { PAYOUT_ROWS, rowsStatements, type Statement } from '../journal-sql.js';
import { PAYOUTS_NOW } from '../tables.js';
import type { JournalRecord, StagedPayout } from '../../domain/records.js';

/** Inserts payouts of run `run`, one statement for the page (its columns as arrays). */
export async function insertPayouts(
  c: pg.Client,
  run: number,
  page: StagedPayout[],
): Promise<void> {
  const values: unknown[] = [];
  const columns = PAYOUTS_NOW.columns.map(([name]) => name);
  for (const p of page) {
    const row: Record<string, unknown> = { ...p, run };
    for (const name of columns) values.push(row[name] ?? null);
  }
  for (const s of rowsStatements(PAYOUT_ROWS, values, 'pg')) {
    await c.query(placeholders(s.sql, 'pg'), s.params);
  }
}

/** Whether run `run` holds exactly these payouts, row for row. */
export async function sameRows(
  c: pg.Client,
  run: number,
  pages: Iterable<StagedPayout[]>,
): Promise<boolean> {
  for (const page of pages) {
    const r = await c.query<{ n: number }>(
      `SELECT count(*)::int AS n
       FROM unnest($2::int[], $3::text[], $4::text[], $5::int[]) AS s(row, ref, hash, v)
       JOIN payouts o ON o.run = $1 AND o.row = s.row AND o.reference_id = s.ref
         AND o.hash IS NOT DISTINCT FROM s.hash AND o.hash_version = s.v`,
      [
        run,
        page.map((p) => p.row),
        page.map((p) => p.reference_id),
        page.map((p) => p.hash),
        page.map((p) => p.hash_version),
      ],
    );
    if (r.rows[0]?.n !== page.length) return false;
  }
  return true;
}

/** The most values PostgreSQL binds to one statement. */
const MAX_PARAMS = 65_535;

/**
 * A commit as one statement, when it holds only intents (of distinct rows), results, reports
 * and, once and last, the run's last request: the parts touch different rows, so one snapshot serves
 * them all, and the commit is one round trip. Undefined when it holds anything else, which
 * must see the effect of what precedes it.
 */
export function oneStatement(
  records: JournalRecord[],
  statements: Statement[],
): pg.QueryConfig | undefined {
  const rows = new Set<number>();
  const last = records.length - 1;
  for (const [k, r] of records.entries()) {
    if (r.kind === 'intent') {
      for (const row of r.rows) {
        if (rows.has(row)) return undefined;
        rows.add(row);
      }
    } else if (r.kind === 'touch' ? k !== last : r.kind !== 'results' && r.kind !== 'reports') {
      return undefined;
    }
  }
  if (records[last]?.kind !== 'touch') return undefined;
  const params = statements.flatMap((s) => s.params);
  if (params.length > MAX_PARAMS) return undefined;
  const parts = statements.slice(0, -1).map((s, k) => `w${k} AS (${s.sql})`);
  const touch = statements[statements.length - 1]!.sql;
  const sql = parts.length ? `WITH ${parts.join(', ')} ${touch}` : touch;
  return { name: commitName(sql), text: placeholders(sql, 'pg'), values: params };
}

/** The commits' texts named so far: a run's commits take a few shapes, each planned once. */
const commitNames = new Map<string, string>();
/** Names a session prepares at most; a commit of yet another shape is planned each time. */
const MAX_NAMES = 64;

/** The prepared statement's name for a commit's text, or none once MAX_NAMES are taken. */
function commitName(sql: string): string | undefined {
  let name = commitNames.get(sql);
  if (name === undefined && commitNames.size < MAX_NAMES) {
    name = `payouts-commit-${commitNames.size}`;
    commitNames.set(sql, name);
  }
  return name;
}

/**
 * Gives each run the service id of its `service`'s identity (serviceIdOf), in the migrating
 * transaction: the trigger that keeps a run's service (guards.ts) is off for this one
 * statement, which only the owner of `runs` may turn off.
 */
export async function rekeyServices(c: pg.Client): Promise<void> {
  const r = await c.query<{ service: string; service_id: string | null }>(
    'SELECT DISTINCT service, service_id FROM runs WHERE service IS NOT NULL',
  );
  const moved = r.rows.filter((x) => x.service_id !== serviceIdOf(x.service));
  if (moved.length === 0) return;
  const services = [...new Set(moved.map((x) => x.service))];
  await c.query('ALTER TABLE runs DISABLE TRIGGER runs_kept');
  await c.query(
    `UPDATE runs AS r SET service_id = k.id FROM unnest($1::text[], $2::text[]) AS k(service, id)
     WHERE r.service = k.service AND r.service_id IS DISTINCT FROM k.id`,
    [services, services.map(serviceIdOf)],
  );
  await c.query('ALTER TABLE runs ENABLE TRIGGER runs_kept');
}
