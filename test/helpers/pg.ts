/** Fresh databases on the tests' PostgreSQL server (see pg-server.ts), one per test. */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import pg from 'pg';
import { beforeEach, inject } from 'vitest';

/** How long a test waits for the server's start, which goes on while tests run. */
const START_WAIT_MS = 30_000;

/** Why the tests' own server did not start, once its start has failed. */
function startFailure(): string | undefined {
  const file = inject('pgFailureFile');
  return file !== '' && existsSync(file) ? readFileSync(file, 'utf8') : undefined;
}

/** Connects as the superuser, waiting for the server to accept connections. */
async function admin(): Promise<pg.Client> {
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

/**
 * An empty database of its own for a test, as a URL: a schema of the server's database
 * `postgres`, which the URL's search_path makes the only one a connection sees (a schema is
 * far quicker to make than a database, which copies a template).
 */
export async function freshDatabase(): Promise<string> {
  const name = `t_${randomBytes(6).toString('hex')}`;
  const c = await admin();
  try {
    await c.query(`CREATE SCHEMA ${name}`);
  } finally {
    await c.end();
  }
  const url = inject('pgUrl');
  const options = `options=${encodeURIComponent(`-c search_path=${name}`)}`;
  return `${url}${url.includes('?') ? '&' : '?'}${options}`;
}

/** Runs one query on a database; its rows. */
export async function query<T extends object = Record<string, unknown>>(
  url: string,
  sql: string,
  params: unknown[] = [],
): Promise<T[]> {
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

/** The two state stores every never-twice test runs against. */
export const STORES = ['sqlite', 'postgres'] as const;
export type Store = (typeof STORES)[number];

/**
 * Registers a fresh database before each test of the enclosing describe when `store` is
 * postgres; returns what adds it to a run's env as PAYOUTS_STATE_URL (nothing for sqlite).
 */
export function storeEnv(store: Store): {
  <E extends Record<string, string>>(env: E): E & { PAYOUTS_STATE_URL?: string };
  url(): string | undefined;
} {
  let url: string | undefined;
  beforeEach(async () => {
    url = store === 'postgres' ? await freshDatabase() : undefined;
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
  const schema = /search_path%3D(t_[0-9a-f]+)/.exec(url)?.[1];
  if (!schema) throw new Error(`no test schema in ${url}`);
  const suffix = randomBytes(4).toString('hex');
  const names = { ana: `ana_${suffix}`, bob: `bob_${suffix}` };
  const c = await admin();
  try {
    for (const name of Object.values(names)) {
      await c.query(`CREATE ROLE ${name} LOGIN PASSWORD 'pw-${name}'`);
    }
    await c.query(`SET search_path = ${schema}`);
    const to = `${names.ana}, ${names.bob}`;
    await c.query(`GRANT USAGE ON SCHEMA ${schema} TO ${to}`);
    await c.query(`GRANT SELECT, INSERT, UPDATE ON runs, payouts, intents, results TO ${to}`);
    await c.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON meta, reports, locks TO ${to}`);
    await c.query(`GRANT SELECT ON schema_version, journal, approval_rules TO ${to}`);
    await c.query(`GRANT SELECT, INSERT ON prepared_runs, prepared_payouts, approvals TO ${to}`);
    await c.query(`GRANT USAGE ON ALL SEQUENCES IN SCHEMA ${schema} TO ${to}`);
  } finally {
    await c.end();
  }
  const as = (name: string) => {
    const u = new URL(url);
    u.username = name;
    u.password = `pw-${name}`;
    return u.toString();
  };
  return { ana: as(names.ana), bob: as(names.bob) };
}
