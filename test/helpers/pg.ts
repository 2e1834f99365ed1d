/** Fresh databases on the tests' PostgreSQL server (see pg-server.ts), one per test. */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';

/** How long a test waits for the server's start, which goes on while tests run. */
const START_WAIT_MS = 30_000;

/** Connects as the superuser, waiting for the server to accept connections. */
async function admin(): Promise<pg.Client> {
  const until = Date.now() + START_WAIT_MS;
  for (;;) {
    const c = new pg.Client({ connectionString: `${inject('pgAdminUrl')}/postgres` });
    c.on('error', () => {});
    try {
      await c.connect();
      return c;
    } catch (err) {
      await c.end().catch(() => {});
      if (Date.now() > until) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** Creates an empty database of its own for a test; its URL. */
export async function freshDatabase(): Promise<string> {
  const name = `t_${randomBytes(6).toString('hex')}`;
  const c = await admin();
  try {
    await c.query(`CREATE DATABASE ${name}`);
  } finally {
    await c.end();
  }
  return `${inject('pgAdminUrl')}/${name}`;
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
