/** What `config check` finds at a shared history, read without changing anything. */
import { PG_MIGRATIONS } from '../schema.js';
import { connectTo, failure } from './failure.js';
import { redactStateUrl } from './url.js';

/** What `config check` finds at a shared history. */
export interface HistoryProbe {
  /** The URL, its password as ***. */
  where: string;
  /** The database role of the session (who payouts records as having sent or approved). */
  role: string;
  database: string;
  server_version: string;
  tls: boolean;
  /** 0: payouts has not used the database yet; its first send creates the tables. */
  schema_version: number;
  /** The schema version this payouts writes. */
  schema_known: number;
  runs: number;
}

/**
 * Connects without changing anything and says what is there: `config check`'s look at a
 * shared history.
 */
export async function probeHistory(url: string): Promise<HistoryProbe> {
  const client = await connectTo(url);
  try {
    const who = await client.query<{ role: string; database: string; version: string }>(
      'SELECT session_user AS role, current_database() AS database, current_setting($1) AS version',
      ['server_version'],
    );
    const tls = await client.query<{ ssl: boolean }>(
      'SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()',
    );
    const tables = await client.query<{ n: string | null }>(
      "SELECT to_regclass('schema_version')::text AS n",
    );
    let schema = 0;
    let runs = 0;
    if (tables.rows[0]?.n) {
      schema =
        (await client.query<{ version: number }>('SELECT version FROM schema_version')).rows[0]
          ?.version ?? 0;
      runs = Number(
        (await client.query<{ n: string }>('SELECT count(*) AS n FROM runs')).rows[0]?.n,
      );
    }
    const w = who.rows[0]!;
    return {
      where: redactStateUrl(url),
      role: w.role,
      database: w.database,
      server_version: w.version,
      tls: tls.rows[0]?.ssl === true,
      schema_version: schema,
      schema_known: PG_MIGRATIONS.length,
      runs,
    };
  } catch (err) {
    throw failure(err, url, 'reading what it holds');
  } finally {
    await client.end().catch(() => {});
  }
}
