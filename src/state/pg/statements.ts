/**
 * The statements only a shared history makes: a run's header and payouts written in (arrays
 * through unnest, a statement a page), and a commit's records as one statement.
 */
import type pg from 'pg';
import { placeholders } from '../dialect.js';
import { serviceId, serviceIdOf } from '../hash.js';
import type { Statement } from '../journal-sql.js';
import type { JournalRecord, StagedPayout } from '../../domain/records.js';
import { hostname as osHostname, userInfo } from 'node:os';
import type { RunHeader } from '../../domain/history.js';

/** The header of a run, as the shared history records it: state.db's, with its id and time. */
export interface SharedRunHeader extends RunHeader {
  runId: string;
  serviceKey: string;
  now: string;
}

/** Records who sends run `id` (the last sender of a resumed run): OS user, host, database role. */
export async function recordSender(
  c: pg.Client,
  id: number,
  sender: { host: string; user: string } | undefined,
): Promise<void> {
  await c.query('UPDATE runs SET host = $2, os_user = $3, db_user = session_user WHERE id = $1', [
    id,
    sender?.host ?? osHostname(),
    sender?.user ?? userInfo().username,
  ]);
}

/** Inserts a run's header; its id. */
export async function insertRun(c: pg.Client, h: SharedRunHeader): Promise<number> {
  const r = await c.query<{ id: number }>(
    `INSERT INTO runs (run_id, service_id, service, client_id, inputs, input_hash, payout_count,
       batch_reference, created_at, updated_at, csv_style)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $10) RETURNING id`,
    [
      h.runId,
      serviceId(h.serviceKey),
      h.service,
      h.client_id,
      JSON.stringify(h.inputs),
      h.input_hash,
      h.payout_count,
      h.batch_reference ?? null,
      h.now,
      h.csv_style ?? null,
    ],
  );
  return r.rows[0]!.id;
}

/** Inserts payouts of run `run`, one statement for the page (its columns as arrays). */
export async function insertPayouts(
  c: pg.Client,
  run: number,
  page: StagedPayout[],
): Promise<void> {
  if (page.length === 0) return;
  const col = <K extends keyof StagedPayout>(k: K) => page.map((p) => p[k]);
  await c.query(
    `INSERT INTO payouts (run, row, reference_id, file, line, location, amount, currency,
       recipient, description, hash, hash_version, retry_of)
     SELECT $1, * FROM unnest($2::int[], $3::text[], $4::text[], $5::int[], $6::text[],
       $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::int[], $13::text[])`,
    [
      run,
      col('row'),
      col('reference_id'),
      col('file'),
      col('line'),
      col('location'),
      col('amount'),
      col('currency'),
      col('recipient'),
      col('description'),
      col('hash'),
      col('hash_version'),
      page.map((p) => p.retry_of ?? null),
    ],
  );
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
