/** Databases on the tests' PostgreSQL server (see pg-server.ts): fresh, or migrated and recycled. */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import pg from 'pg';
import { afterEach, beforeEach, inject, onTestFinished } from 'vitest';
import { PgHistory } from '../../src/state/pg/history.js';

/** How long a test waits for the server's start, which goes on while tests run. */
const START_WAIT_MS = 30_000;

/** Why the tests' own server did not start, once its start has failed. */
function startFailure(): string | undefined {
  const file = inject('pgFailureFile');
  return file !== '' && existsSync(file) ? readFileSync(file, 'utf8') : undefined;
}

/** Connects as the superuser, waiting for the server to accept connections. */
async function connectAdmin(): Promise<pg.Client> {
  const until = Date.now() + START_WAIT_MS;
  for (;;) {
    const c = new pg.Client({ connectionString: inject('pgUrl') });
    c.on('error', () => {});
    try {
      await c.connect();
      return c;
    } catch (err) {
      await c.end().catch(() => {});
      const failure = startFailure();
      if (failure !== undefined) throw new Error(failure);
      // A server of one's own was reached at the start: only ours may still be starting.
      const ours = inject('pgFailureFile') !== '';
      if (!ours || Date.now() > until) {
        const from = ours ? "the tests' server" : 'PAYOUTS_TEST_PG_URL';
        throw new Error(`${from} could not be reached: ${(err as Error).message}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** This worker's superuser session, while it lasts, and the work queued on it. */
let session: pg.Client | undefined;
let queued: Promise<unknown> = Promise.resolve();

/**
 * Runs `work` on this worker's superuser session, one piece of work at a time: one login a
 * worker rather than one a schema, role or schema given back (a login costs the server some
 * 4 ms of CPU). Settings go in a transaction (SET LOCAL), for the next piece to find none.
 */
function asAdmin<T>(work: (c: pg.Client) => Promise<T>): Promise<T> {
  const done = queued.then(async () => {
    if (session === undefined) {
      const c = await connectAdmin();
      const forget = () => {
        if (session === c) session = undefined;
      };
      c.on('error', forget);
      c.on('end', forget);
      // An idle session keeps no worker from ending (pg's socket, where pg keeps it).
      (
        c as unknown as { connection?: { stream?: { unref?(): void } } }
      ).connection?.stream?.unref?.();
      session = c;
    }
    const c = session;
    try {
      return await work(c);
    } catch (err) {
      // A failed statement leaves its transaction open and aborted: closed for the next piece.
      await c.query('ROLLBACK').catch(() => {});
      throw err;
    }
  });
  queued = done.catch(() => {});
  return done;
}

/** The schema of a test's database URL. */
export function schemaOf(url: string): string {
  const schema = /search_path%3D(t_[0-9a-f]+)/.exec(url)?.[1];
  if (!schema) throw new Error(`no test schema in ${url}`);
  return schema;
}

/**
 * An empty database of its own for a test, as a URL: a schema of the server's database
 * `postgres`, which the URL's search_path makes the only one a connection sees (a schema is
 * far quicker to make than a database, which copies a template).
 */
export async function freshDatabase(): Promise<string> {
  const name = `t_${randomBytes(6).toString('hex')}`;
  await asAdmin((c) => c.query(`CREATE SCHEMA ${name}`));
  const url = inject('pgUrl');
  const options = `options=${encodeURIComponent(`-c search_path=${name}`)}`;
  return `${url}${url.includes('?') ? '&' : '?'}${options}`;
}

/** The schema of a URL whose role and database are the tests' superuser's, else undefined. */
function adminSchemaOf(url: string): string | undefined {
  const schema = /search_path%3D(t_[0-9a-f]+)/.exec(url)?.[1];
  if (schema === undefined) return undefined;
  const [u, admin] = [new URL(url), new URL(inject('pgUrl'))];
  const same = (x: URL) => `${x.username}:${x.password}@${x.host}${x.pathname}`;
  return same(u) === same(admin) ? schema : undefined;
}

/**
 * Runs one query on a database; its rows. As the superuser, on this worker's own session (in a
 * transaction whose search_path is the URL's): one login less a query. As any other role, on a
 * session of its own.
 */
export async function query<T extends object = Record<string, unknown>>(
  url: string,
  sql: string,
  params: unknown[] = [],
): Promise<T[]> {
  const schema = adminSchemaOf(url);
  if (schema !== undefined) {
    return asAdmin(async (c) => {
      await c.query(`BEGIN; SET LOCAL search_path = ${schema}`);
      const { rows } = await c.query(sql, params);
      await c.query('COMMIT');
      return rows as T[];
    });
  }
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(sql, params)).rows as T[];
  } finally {
    await c.end();
  }
}

/** The first row of a query on a database, as the role its URL names. */
export async function queryOne<T extends object = Record<string, unknown>>(
  url: string,
  sql: string,
  params: unknown[] = [],
): Promise<T> {
  return (await query<T>(url, sql, params))[0] as T;
}

/**
 * What a history's schema is made of, as one text: its rights and its relations' (a right
 * granted and taken back reads as never granted), its relations, columns, constraints,
 * indexes, triggers (and whether each is on), functions, views and schema version, in a set
 * order and with the schema's own name left out, so that two schemas migrated alike read the
 * same. A schema given back whose text differs from what migrating made is not used again.
 */
const SHAPE_SQL = `
WITH here AS (SELECT oid FROM pg_namespace WHERE nspname = current_schema()),
rels AS MATERIALIZED (SELECT * FROM pg_class WHERE relnamespace = (SELECT oid FROM here))
SELECT replace(concat_ws(E'\n',
  (SELECT coalesce(n.nspacl, acldefault('n'::"char", n.nspowner))::text
     FROM pg_namespace n WHERE n.oid = (SELECT oid FROM here)),
  (SELECT string_agg(format('%s %s %s', c.relname, c.relkind, coalesce(c.relacl,
            acldefault(CASE c.relkind WHEN 'S' THEN 's' ELSE 'r' END::"char", c.relowner))),
            E'\n' ORDER BY c.relname)
     FROM rels c),
  (SELECT string_agg(format('%s.%s %s %s %s', c.relname, a.attname, a.atttypid,
            a.attnotnull, pg_get_expr(d.adbin, d.adrelid)), E'\n' ORDER BY c.relname, a.attnum)
     FROM rels c
     CROSS JOIN LATERAL (SELECT * FROM pg_attribute x WHERE x.attrelid = c.oid OFFSET 0) a
     LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    WHERE a.attnum > 0 AND NOT a.attisdropped),
  (SELECT string_agg(format('%s %s %s', k.conrelid::regclass, k.conname,
            pg_get_constraintdef(k.oid)), E'\n' ORDER BY k.conrelid::regclass::text, k.conname)
     FROM pg_constraint k WHERE k.connamespace = (SELECT oid FROM here)),
  (SELECT string_agg(pg_get_indexdef(i.indexrelid), E'\n' ORDER BY pg_get_indexdef(i.indexrelid))
     FROM pg_index i JOIN rels c ON c.oid = i.indrelid),
  (SELECT string_agg(pg_get_triggerdef(t.oid) || t.tgenabled::text, E'\n' ORDER BY c.relname, t.tgname)
     FROM pg_trigger t JOIN rels c ON c.oid = t.tgrelid
    WHERE NOT t.tgisinternal),
  (SELECT string_agg(pg_get_functiondef(f.oid), E'\n'
            ORDER BY f.proname, pg_get_function_identity_arguments(f.oid))
     FROM pg_proc f WHERE f.pronamespace = (SELECT oid FROM here)),
  (SELECT string_agg(pg_get_viewdef(c.oid), E'\n' ORDER BY c.relname)
     FROM rels c WHERE c.relkind = 'v'),
  (SELECT string_agg(version::text, ',' ORDER BY version) FROM schema_version)
), current_schema(), '<schema>') AS shape`;

/** Migrated schemas of this worker that tests gave back emptied. */
const recycled: string[] = [];
/** The shape migrating makes, taken from the first schema this worker migrates. */
let migratedShape: string | undefined;

/**
 * A database with the history's schema already made, as payouts makes it on first use: one
 * an earlier test of this worker gave back emptied, else a fresh one migrated here (by
 * PgHistory.open, the CLI's own migration). The migration itself is tested on fresh ones.
 */
export async function migratedDatabase(): Promise<string> {
  const again = recycled.pop();
  if (again !== undefined) return again;
  const url = await freshDatabase();
  await (await PgHistory.open(url)).close();
  migratedShape ??= (await queryOne<{ shape: string }>(url, SHAPE_SQL)).shape;
  return url;
}

/**
 * migratedDatabase for the test calling it, given back emptied when the test ends: for a test
 * of what a history holds and does, not of its making or of a first use of an empty one.
 */
export async function recycledDatabase(): Promise<string> {
  const url = await migratedDatabase();
  onTestFinished(() => giveBack(url));
  return url;
}

/** The roles teamRoles made on each database, dropped when it is given back. */
const rolesOf = new Map<string, string[]>();

/**
 * Empties a migrated database after its test, for another test to use, unless anything
 * but its rows changed (its shape, once teamRoles' roles are dropped) or it cannot be
 * emptied at once: then it is left alone and never used again.
 */
async function giveBack(url: string): Promise<void> {
  const schema = schemaOf(url);
  const roles = rolesOf.get(url) ?? [];
  rolesOf.delete(url);
  await asAdmin(async (c) => {
    await c.query(`BEGIN; SET LOCAL search_path = ${schema}; SET LOCAL lock_timeout = '1s'`);
    if (roles.length > 0) {
      // Their grants go with them; anything they made goes too, which the shape then shows.
      await c.query(`DROP OWNED BY ${roles.join(', ')}; DROP ROLE ${roles.join(', ')}`);
    }
    const { shape } = (await c.query<{ shape: string }>(SHAPE_SQL)).rows[0]!;
    if (shape !== migratedShape) throw new Error(`${schema} changed shape`);
    const rels = await c.query<{ name: string; kind: string }>(
      `SELECT relname AS name, relkind AS kind FROM pg_class
        WHERE relnamespace = current_schema()::regnamespace AND relkind IN ('r', 'S')
          AND relname <> 'schema_version'`,
    );
    // The history's own guards refuse a DELETE: as the superuser, with triggers off. DELETE
    // and setval, not TRUNCATE, which costs the server more than migrating a new schema.
    const empty = rels.rows.map((r) =>
      r.kind === 'r' ? `DELETE FROM ${r.name};` : `SELECT setval('${r.name}', 1, false);`,
    );
    await c.query(`SET LOCAL session_replication_role = replica; ${empty.join(' ')} COMMIT`);
    recycled.push(url);
  }).catch(() => {
    // Left as it is (asAdmin rolled back), never used again.
  });
}

/** The two state stores every never-twice test runs against. */
export const STORES = ['sqlite', 'postgres'] as const;
export type Store = (typeof STORES)[number];

/**
 * Registers a fresh database before each test of the enclosing describe when `store` is
 * postgres; returns what adds it to a run's env as PAYOUTS_STATE_URL (nothing for sqlite).
 * With `migrated`, for tests of what is sent rather than of the schema, it is an empty,
 * already migrated one (migratedDatabase), given back after the test: some 40% less of the
 * server's time for those tests.
 */
export function storeEnv(
  store: Store,
  how: { migrated?: boolean } = {},
): {
  <E extends Record<string, string>>(env: E): E & { PAYOUTS_STATE_URL?: string };
  url(): string | undefined;
} {
  let url: string | undefined;
  beforeEach(async () => {
    if (store === 'sqlite') url = undefined;
    else url = how.migrated ? await migratedDatabase() : await freshDatabase();
  });
  afterEach(async () => {
    if (url !== undefined && how.migrated) await giveBack(url);
  });
  const withStore = <E extends Record<string, string>>(env: E) =>
    url === undefined ? env : { ...env, PAYOUTS_STATE_URL: url };
  return Object.assign(withStore, { url: () => url });
}

/**
 * Two people's roles on a test's database, made and granted as docs/approvals.md says (after
 * the schema exists): their URLs. Role names are the server's, so each test makes its own.
 */
export async function teamRoles(url: string): Promise<{ ana: string; bob: string }> {
  const schema = schemaOf(url);
  const suffix = randomBytes(4).toString('hex');
  const names = { ana: `ana_${suffix}`, bob: `bob_${suffix}` };
  rolesOf.set(url, [...(rolesOf.get(url) ?? []), names.ana, names.bob]);
  const to = `${names.ana}, ${names.bob}`;
  await asAdmin((c) =>
    c.query(`BEGIN;
      CREATE ROLE ${names.ana} LOGIN PASSWORD 'pw-${names.ana}';
      CREATE ROLE ${names.bob} LOGIN PASSWORD 'pw-${names.bob}';
      SET LOCAL search_path = ${schema};
      GRANT USAGE ON SCHEMA ${schema} TO ${to};
      GRANT SELECT, INSERT, UPDATE ON runs, payouts, intents, results TO ${to};
      GRANT SELECT, INSERT, UPDATE, DELETE ON meta, reports, locks TO ${to};
      GRANT SELECT ON schema_version, journal, approval_rules TO ${to};
      GRANT SELECT, INSERT ON prepared_runs, prepared_payouts, approvals TO ${to};
      GRANT USAGE ON ALL SEQUENCES IN SCHEMA ${schema} TO ${to};
      COMMIT`),
  );
  // A history of an older version gets these from its migration (to whoever may write intents).
  await asAdmin((c) =>
    c.query(`BEGIN;
      SET LOCAL search_path = ${schema};
      DO $$ BEGIN
        IF to_regclass('attempts') IS NOT NULL THEN
          GRANT SELECT, INSERT ON attempts, withdrawals TO ${to};
        END IF;
        IF to_regclass('checks') IS NOT NULL THEN
          GRANT SELECT, INSERT ON checks TO ${to};
        END IF;
      END $$;
      COMMIT`),
  );
  const as = (name: string) => {
    const u = new URL(url);
    u.username = name;
    u.password = `pw-${name}`;
    return u.toString();
  };
  return { ana: as(names.ana), bob: as(names.bob) };
}
