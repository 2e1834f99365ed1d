/**
 * A history shared by every machine that sends for an account, in a PostgreSQL database the
 * team runs. A send stages and reports from a private local database as a dry run does; what
 * makes a payout "sent" lives here: the run, its payouts, and every commit of its journal
 * (applied as the same records, in one transaction each, before the commit counts as done).
 * One sending run per service at a time is held by a session-level advisory lock, which the
 * server gives back by itself when the session ends.
 */
import { hostname as osHostname, userInfo } from 'node:os';
import type pg from 'pg';
import { BusyError, PayoutsError, StateStoreError } from '../../errors.js';
import { serviceId } from '../hash.js';
import type { PriorRow, RunHeader } from '../../domain/history.js';
import type { JournalMirror, JournalRecord } from '../../domain/records.js';
import { payoutOf } from '../run-state.js';
import { ADVISORY_CLASS } from '../runs.js';
import { PG_MIGRATIONS } from '../schema.js';
import { redactMessage, redactStateUrl } from './url.js';

/** The first key of every advisory lock payouts takes. */
const LOCK_CLASS = ADVISORY_CLASS;
/** The second key of the lock that serialises migrations. */
const MIGRATION_LOCK = 0;

/** A staged payout as the local database holds it. */
export interface StagedPayout {
  row: number;
  reference_id: string;
  file: string | null;
  line: number | null;
  location: string | null;
  amount: string;
  currency: string;
  recipient: string;
  description: string | null;
  hash: string | null;
  hash_version: number;
}

/** Who holds a service's lock, as the holder wrote it. */
export interface LockHolder {
  host: string;
  user: string;
  pid: number;
  started_at: string;
  command: string;
}

/** The header of a run, as the shared history records it: state.db's, with its id and time. */
export interface SharedRunHeader extends RunHeader {
  runId: string;
  serviceKey: string;
  now: string;
}

/** The run a send adopts in the shared history. */
export interface SharedRun {
  id: number;
  resumed: boolean;
  lastReq: number;
  /** How far its payouts are copied in (all of them when resumed). */
  copied: CopyProgress;
}

/**
 * How far a run's payouts are copied into the shared history: the rows below `rows` are
 * committed. The first page is copied with the run; the others follow while the run sends,
 * and an intent waits until its rows are there, so a later run's lookup by reference (which
 * joins the payouts) finds every payout an intent names.
 */
export class CopyProgress {
  private rows: number;
  private done = false;
  private error: unknown;
  private waiters: Array<{ rows: number; resolve: () => void; reject: (e: unknown) => void }> = [];

  constructor(rows: number, done: boolean) {
    this.rows = rows;
    this.done = done;
  }

  /** Resolves once the rows below `rows` are copied (Infinity: all of them). */
  reached(rows: number): Promise<void> {
    if (this.error !== undefined) return Promise.reject(this.error);
    if (this.done || this.rows >= rows) return Promise.resolve();
    return new Promise((resolve, reject) => this.waiters.push({ rows, resolve, reject }));
  }

  /** The rows below `rows` are committed. */
  advance(rows: number): void {
    this.rows = rows;
    this.wake();
  }

  finish(): void {
    this.done = true;
    this.wake();
  }

  fail(err: unknown): void {
    this.error = err;
    for (const w of this.waiters.splice(0)) w.reject(err);
  }

  private wake(): void {
    const waiting = this.waiters;
    this.waiters = [];
    for (const w of waiting) {
      if (this.done || this.rows >= w.rows) w.resolve();
      else this.waiters.push(w);
    }
  }
}

/** The rows a commit's records need copied first: an intent's, or all for a lookup by reference. */
function rowsNeeded(records: JournalRecord[]): number {
  let need = 0;
  for (const r of records) {
    if (r.kind === 'intent') for (const row of r.rows) need = Math.max(need, row + 1);
    else if (r.kind !== 'results' && r.kind !== 'reports' && r.kind !== 'touch') return Infinity;
  }
  return need;
}

/** The 32-bit lock key of a service: the first 8 hex digits of its id. */
function lockKey(service: string): number {
  return Number.parseInt(service.slice(0, 8), 16) | 0;
}

/**
 * Whether an error means the session is gone: the server stopped or restarted (SQLSTATE class
 * 57P), the network dropped, or node-postgres refuses a client whose connection failed.
 */
function connectionLost(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  if (
    typeof code === 'string' &&
    /^(57P0[123]|ECONNRESET|ECONNREFUSED|EPIPE|ETIMEDOUT)$/.test(code)
  )
    return true;
  const message = err instanceof Error ? err.message : String(err);
  return /Connection terminated|connection error and is not queryable|Client was closed/i.test(
    message,
  );
}

/**
 * What to do about a TLS failure: the server lacks TLS, or its certificate cannot be checked;
 * '' for any other failure.
 */
function tlsHint(message: string, url: string): string {
  const mode = /[?&]sslmode=([^&#]*)/.exec(url)?.[1] ?? '';
  if (/does not support SSL/i.test(message)) {
    return `. The server does not offer TLS, which sslmode=${mode || 'require'} asks for: turn TLS on at the server (ssl = on, with a certificate for its name), or, on a network you trust, connect with sslmode=disable`;
  }
  if (/self[- ]signed|unable to (get|verify)|certificate|altnames|hostname/i.test(message)) {
    return `. The server's certificate could not be checked (sslmode=${mode}): give its CA with sslrootcert=/path/ca.pem, make the certificate name the host of the URL, or, to encrypt without checking, use sslmode=no-verify`;
  }
  return '';
}

/** The state of the database's error, or the error's own message, without the URL's secrets. */
function failure(err: unknown, url: string, doing: string): PayoutsError {
  const raw = err instanceof Error ? err.message : String(err);
  const message = redactMessage(raw, url) + tlsHint(raw, url);
  if (connectionLost(err)) {
    return new StateStoreError(
      `the connection to the shared history at ${redactStateUrl(url)} was lost while ${doing} (${message}): once the database is reachable, run the same command again; it reads back what this run left in doubt`,
      { cause: err },
    );
  }
  return new StateStoreError(
    `the shared history at ${redactStateUrl(url)} failed while ${doing}: ${message}`,
  );
}

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

/** A connection to a shared history. */
export class PgHistory {
  /** Queries one after the other: a transaction's statements must not interleave with others'. */
  private queue: Promise<unknown> = Promise.resolve();
  /** Who sends through this session once it holds a lock: recorded with the runs it adopts. */
  private sender: LockHolder | undefined;
  /** Runs' payouts still being copied in, awaited by close(). */
  private readonly copying: Array<Promise<void>> = [];

  private constructor(
    private readonly client: pg.Client,
    private readonly url: string,
  ) {}

  /** The address as it may be shown. */
  get where(): string {
    return redactStateUrl(this.url);
  }

  /** Connects (TLS as the URL's sslmode says) and brings the schema up to date. */
  static async open(url: string): Promise<PgHistory> {
    const { default: pgModule } = await import('pg');
    const client = new pgModule.Client({ connectionString: url, application_name: 'payouts' });
    // A lost connection is reported by the next query; an unhandled 'error' would end the process.
    client.on('error', () => {});
    try {
      await client.connect();
    } catch (err) {
      await client.end().catch(() => {});
      throw failure(err, url, 'connecting');
    }
    const history = new PgHistory(client, url);
    try {
      await history.migrate();
    } catch (err) {
      await history.close();
      throw err;
    }
    return history;
  }

  /**
   * Connects without changing anything and says what is there: `config check`'s look at a
   * shared history.
   */
  static async probe(url: string): Promise<HistoryProbe> {
    const { default: pgModule } = await import('pg');
    const client = new pgModule.Client({ connectionString: url, application_name: 'payouts' });
    client.on('error', () => {});
    try {
      await client.connect();
    } catch (err) {
      await client.end().catch(() => {});
      throw failure(err, url, 'connecting');
    }
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

  /** Closes the session, which gives back any lock it holds. */
  async close(): Promise<void> {
    await Promise.all(this.copying);
    await this.queue.catch(() => {});
    await this.client.end().catch(() => {});
  }

  /** Runs `work` after everything queued before it; errors name the history, not its password. */
  private serial<T>(doing: string, work: (c: pg.Client) => Promise<T>): Promise<T> {
    const run = this.queue.then(
      () => work(this.client),
      () => work(this.client),
    );
    this.queue = run.catch(() => {});
    return run.catch((err: unknown) => {
      if (err instanceof PayoutsError) throw err;
      throw failure(err, this.url, doing);
    });
  }

  /** Runs `work` in one transaction. */
  private tx<T>(doing: string, work: (c: pg.Client) => Promise<T>): Promise<T> {
    return this.serial(doing, async (c) => {
      await c.query('BEGIN');
      try {
        const out = await work(c);
        await c.query('COMMIT');
        return out;
      } catch (err) {
        await c.query('ROLLBACK').catch(() => {});
        throw err;
      }
    });
  }

  /** The schema version the database holds (0: none yet). */
  private version(): Promise<number> {
    return this.serial('reading its schema version', async (c) => {
      try {
        const r = await c.query<{ version: number }>('SELECT version FROM schema_version');
        return r.rows[0]?.version ?? 0;
      } catch (err) {
        // undefined_table: a database payouts has not used yet.
        if ((err as { code?: string }).code === '42P01') return 0;
        throw err;
      }
    });
  }

  /** Applies the steps the database has not seen, one migrator at a time. */
  private async migrate(): Promise<void> {
    // One round trip when the schema is current, as it is for every run but the first.
    if ((await this.version()) === PG_MIGRATIONS.length) return;
    await this.tx('updating its schema', async (c) => {
      await c.query('SELECT pg_advisory_xact_lock($1, $2)', [LOCK_CLASS, MIGRATION_LOCK]);
      await c.query('CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)');
      const r = await c.query<{ version: number }>('SELECT version FROM schema_version');
      const current = r.rows[0]?.version ?? 0;
      if (current > PG_MIGRATIONS.length) {
        throw new PayoutsError(
          `the shared history at ${this.where} was written by a newer version of payouts (schema ${current}, this version knows ${PG_MIGRATIONS.length}); update payouts to use it`,
        );
      }
      for (const step of PG_MIGRATIONS.slice(current)) await c.query(step);
      if (r.rows.length === 0) {
        await c.query('INSERT INTO schema_version (version) VALUES ($1)', [PG_MIGRATIONS.length]);
      } else await c.query('UPDATE schema_version SET version = $1', [PG_MIGRATIONS.length]);
    });
  }

  /**
   * Takes the service's lock for this session, and records who holds it and which run; a
   * BusyError naming the holder's user, host, start time and what it is doing when another
   * session holds it.
   */
  async lockService(
    serviceKey: string,
    me: Omit<LockHolder, 'host' | 'user'> & { host?: string; user?: string; runId?: string },
  ): Promise<{ release(): Promise<void> }> {
    const service = serviceId(serviceKey);
    const key = lockKey(service);
    const holder: LockHolder = {
      host: me.host ?? osHostname(),
      user: me.user ?? userInfo().username,
      pid: me.pid,
      started_at: me.started_at,
      command: me.command,
    };
    await this.serial('taking the run lock', async (c) => {
      const got = await c.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS ok', [
        LOCK_CLASS,
        key,
      ]);
      if (!got.rows[0]?.ok) throw await this.busy(c, service);
      await c.query(
        `INSERT INTO locks (service_id, host, os_user, pid, started_at, command, db_user, run_id,
           phase, backend_pid)
         VALUES ($1, $2, $3, $4, $5, $6, session_user, $7, 'sending', pg_backend_pid())
         ON CONFLICT (service_id) DO UPDATE SET host = excluded.host, os_user = excluded.os_user,
           pid = excluded.pid, started_at = excluded.started_at, command = excluded.command,
           db_user = excluded.db_user, run_id = excluded.run_id, phase = excluded.phase,
           backend_pid = excluded.backend_pid`,
        [
          service,
          holder.host,
          holder.user,
          holder.pid,
          holder.started_at,
          holder.command,
          me.runId ?? null,
        ],
      );
    });
    this.sender = holder;
    let released = false;
    return {
      release: async () => {
        if (released) return;
        released = true;
        await this.serial('giving back the run lock', async (c) => {
          await c.query('DELETE FROM locks WHERE service_id = $1 AND host = $2 AND pid = $3', [
            service,
            holder.host,
            holder.pid,
          ]);
          await c.query('SELECT pg_advisory_unlock($1, $2)', [LOCK_CLASS, key]);
        });
      },
    };
  }

  /** The error for a service whose lock another session holds. */
  private async busy(c: pg.Client, service: string): Promise<BusyError> {
    const r = await c.query<{
      host: string;
      os_user: string;
      db_user: string | null;
      pid: number;
      started_at: string;
      command: string;
      phase: string;
    }>(
      'SELECT host, os_user, db_user, pid, started_at, command, phase FROM locks WHERE service_id = $1',
      [service],
    );
    const h = r.rows[0];
    const role = h?.db_user ? `, database role ${h.db_user}` : '';
    // A run takes the lock only once its question is answered, so its holder is sending.
    const doing = h?.phase ?? 'sending';
    const who = h
      ? `on host ${h.host}, user ${h.os_user}${role}, pid ${h.pid}, started ${h.started_at}, ${doing}: ${JSON.stringify(h.command)}`
      : 'it has not recorded its host yet';
    const short = h ? `${h.os_user}@${h.host}, ${doing} since ${h.started_at}` : 'another send';
    return new BusyError(
      `another payouts send to this service is running, sharing the history at ${this.where} (${who}); nothing was sent. Wait for it to finish, or run again with --wait to wait for it: its lock is given back when it ends, or when its connection to the database does`,
      short,
    );
  }

  /**
   * What the runs of a service hold about staged payouts: one indexed lookup on
   * (reference_id, run) per page of references, in the order of the staged rows.
   */
  async prior(serviceKey: string, pages: Iterable<StagedPayout[]>): Promise<PriorRow[]> {
    const service = serviceId(serviceKey);
    const out: PriorRow[] = [];
    // A service never sent to has nothing to look up: one query instead of one per page.
    if (!(await this.hasRuns(serviceKey))) return out;
    for (const page of pages) {
      const refs = page.map((p) => p.reference_id);
      const r = await this.serial('looking up earlier sends', (c) =>
        c.query<Omit<PriorRow, 'row' | 'payout'> & { reference_id: string }>(
          `SELECT o.reference_id, r.run_id, r.client_id, o.hash, o.hash_version, o.state, o.req, o.sent_at,
             o.status, o.transaction_id, o.charges, o.message
           FROM journal o JOIN runs r ON r.id = o.run
           WHERE o.reference_id = ANY($1::text[]) AND r.service_id = $2
             AND o.state IN ('in_flight', 'done', 'unknown')
           ORDER BY o.run`,
          [refs, service],
        ),
      );
      if (r.rows.length === 0) continue;
      const byRef = new Map<string, typeof r.rows>();
      for (const h of r.rows) {
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
    return out;
  }

  /** Whether the history holds any run of the service. */
  async hasRuns(serviceKey: string): Promise<boolean> {
    const r = await this.serial('looking up the service', (c) =>
      c.query('SELECT 1 FROM runs WHERE service_id = $1 LIMIT 1', [serviceId(serviceKey)]),
    );
    return r.rows.length > 0;
  }

  /**
   * Adopts a send's staged payouts as its run: resumed when a run of the same id holds the
   * very same payouts, otherwise recorded anew (an older run of that id keeps its states
   * under a suffixed id).
   */
  async adopt(header: SharedRunHeader, pages: () => Iterable<StagedPayout[]>): Promise<SharedRun> {
    const rest = pages()[Symbol.iterator]();
    const run = await this.tx('recording the run', async (c) => {
      const old = await c.query<{ id: number; payout_count: number }>(
        'SELECT id, payout_count FROM runs WHERE run_id = $1 FOR UPDATE',
        [header.runId],
      );
      const o = old.rows[0];
      if (o && o.payout_count === header.payout_count && (await sameRows(c, o.id, pages()))) {
        await c.query('UPDATE runs SET updated_at = $1 WHERE id = $2', [header.now, o.id]);
        await recordSender(c, o.id, this.sender);
        await c.query('DELETE FROM reports WHERE run = $1', [o.id]);
        const n = await c.query<{ n: number }>(
          `SELECT greatest(r.last_req,
             coalesce((SELECT max(req) FROM intents WHERE run = r.id), 0),
             coalesce((SELECT max(req) FROM results WHERE run = r.id), 0)) AS n
           FROM runs r WHERE r.id = $1`,
          [o.id],
        );
        const copied = new CopyProgress(header.payout_count, true);
        return { id: o.id, resumed: true, lastReq: n.rows[0]?.n ?? 0, copied };
      }
      if (o) {
        await c.query("UPDATE runs SET run_id = run_id || '-' || id WHERE id = $1", [o.id]);
      }
      const id = await insertRun(c, header);
      await recordSender(c, id, this.sender);
      // The first page goes with the run; the rest follow while it sends (copyRest).
      const first = rest.next();
      const rows = first.done ? 0 : lastRowOf(first.value) + 1;
      if (!first.done) await insertPayouts(c, id, first.value);
      return {
        id,
        resumed: false,
        lastReq: 0,
        copied: new CopyProgress(rows, first.done === true),
      };
    });
    if (!run.resumed) this.copyRest(run, rest);
    return run;
  }

  /**
   * Copies a run's remaining pages, a statement each, on a connection of their own, so that
   * the run's commits never wait behind them; advances the run's progress.
   */
  private copyRest(run: SharedRun, rest: Iterator<StagedPayout[]>): void {
    const copying = (async () => {
      const first = rest.next();
      if (first.done) return run.copied.finish();
      const c = await this.connect();
      try {
        for (let page: IteratorResult<StagedPayout[]> = first; !page.done; page = rest.next()) {
          await insertPayouts(c, run.id, page.value);
          run.copied.advance(lastRowOf(page.value) + 1);
        }
      } finally {
        await c.end().catch(() => {});
      }
      run.copied.finish();
    })().catch((err: unknown) => run.copied.fail(failure(err, this.url, 'copying the run')));
    this.copying.push(copying);
  }

  /** Another session on the same database. */
  private async connect(): Promise<pg.Client> {
    const { default: pgModule } = await import('pg');
    const c = new pgModule.Client({ connectionString: this.url, application_name: 'payouts' });
    c.on('error', () => {});
    await c.connect();
    return c;
  }

  /**
   * The journal of run `run` in this history, for RunState's commits. A commit of intents,
   * results and reports only (nearly every one) is one statement, so one round trip; others
   * are a transaction of a statement per record.
   */
  mirrorOf(run: number, copied?: CopyProgress): JournalMirror {
    return {
      apply: async (records) => {
        await copied?.reached(rowsNeeded(records));
        const quick = oneStatement(run, records);
        if (quick) return this.serial('recording what was sent', (c) => c.query(quick).then());
        return this.tx('recording what was sent', async (c) => {
          for (const r of records) await applyRecord(c, run, r);
        });
      },
    };
  }

  /** Rows of a query written with `?` placeholders, as state.db's are (listing runs). */
  rows(sql: string, params: unknown[]): Promise<unknown[]> {
    let n = 0;
    const text = sql.replace(/\?/g, () => `$${++n}`);
    return this.serial('reading runs', async (c) => (await c.query(text, params)).rows);
  }

  /** Runs a read on the history. */
  read<T>(doing: string, work: (c: pg.Client) => Promise<T>): Promise<T> {
    return this.serial(doing, work);
  }

  /** Runs a write in one transaction (copying a local history in). */
  write<T>(doing: string, work: (c: pg.Client) => Promise<T>): Promise<T> {
    return this.tx(doing, work);
  }
}

/** The row number of a page's last payout. */
function lastRowOf(page: StagedPayout[]): number {
  return page[page.length - 1]!.row;
}

/** Records who sends run `id` (the last sender of a resumed run): OS user, host, database role. */
async function recordSender(
  c: pg.Client,
  id: number,
  sender: LockHolder | undefined,
): Promise<void> {
  await c.query('UPDATE runs SET host = $2, os_user = $3, db_user = session_user WHERE id = $1', [
    id,
    sender?.host ?? osHostname(),
    sender?.user ?? userInfo().username,
  ]);
}

/** Inserts a run's header; its id. */
async function insertRun(c: pg.Client, h: SharedRunHeader): Promise<number> {
  const r = await c.query<{ id: number }>(
    `INSERT INTO runs (run_id, service_id, service, client_id, inputs, input_hash, payout_count,
       batch_reference, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) RETURNING id`,
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
       recipient, description, hash, hash_version)
     SELECT $1, * FROM unnest($2::int[], $3::text[], $4::text[], $5::int[], $6::text[],
       $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::int[])`,
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
    ],
  );
}

/** Whether run `run` holds exactly these payouts, row for row. */
async function sameRows(
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

/** Writes intents, results and reports, and the run's last request, in one statement. */
const ONE_STATEMENT = `
  WITH i AS (
    INSERT INTO intents (run, row, state, req, sent_at, note, updated_at)
    SELECT $1, x.row, 'in_flight', x.req, x.at, NULL, x.at
    FROM unnest($2::int[], $3::int[], $4::text[]) AS x(row, req, at)
    ON CONFLICT (run, row) DO UPDATE SET state = 'in_flight', req = excluded.req,
      sent_at = excluded.sent_at, note = NULL, updated_at = excluded.updated_at
  ), d AS (
    INSERT INTO results (run, row, req, status, transaction_id, charges, message, at)
    SELECT $1, * FROM unnest($5::int[], $6::int[], $7::text[], $8::text[], $9::text[],
      $10::text[], $11::text[])
    ON CONFLICT (run, row) DO UPDATE SET req = excluded.req, status = excluded.status,
      transaction_id = excluded.transaction_id, charges = excluded.charges,
      message = excluded.message, at = excluded.at
  ), o AS (
    INSERT INTO reports (run, row, status, transaction_id, charges, message, sent_earlier)
    SELECT $1, * FROM unnest($12::int[], $13::text[], $14::text[], $15::text[], $16::text[],
      $17::int[])
    ON CONFLICT (run, row) DO UPDATE SET status = excluded.status,
      transaction_id = excluded.transaction_id, charges = excluded.charges,
      message = excluded.message, sent_earlier = excluded.sent_earlier
  )
  UPDATE runs SET last_req = greatest(last_req, $18), updated_at = $19 WHERE id = $1`;

/** Columns of rows given as a flat list, `width` values a row, without the first (the run). */
function columnsOf(values: unknown[], width: number): unknown[][] {
  const cols: unknown[][] = Array.from({ length: width - 1 }, () => []);
  for (let k = 0; k < values.length; k += width) {
    for (let j = 1; j < width; j++) cols[j - 1]!.push(values[k + j] ?? null);
  }
  return cols;
}

/**
 * A commit as one statement, when it holds only intents (of distinct rows), results, reports
 * and the run's last request: the parts touch different tables, so one snapshot serves them
 * all. Undefined when it holds anything else, which must see the effect of what precedes it.
 */
function oneStatement(run: number, records: JournalRecord[]): pg.QueryConfig | undefined {
  const intent: [number[], number[], string[]] = [[], [], []];
  const rows = new Set<number>();
  let results: unknown[] = [];
  let reports: unknown[] = [];
  let touch: { lastReq: number; at: string } | undefined;
  for (const r of records) {
    if (r.kind === 'intent') {
      for (const row of r.rows) {
        if (rows.has(row)) return undefined;
        rows.add(row);
        intent[0].push(row);
        intent[1].push(r.req);
        intent[2].push(r.at);
      }
    } else if (r.kind === 'results') results = results.concat(r.values);
    else if (r.kind === 'reports') reports = reports.concat(r.values);
    else if (r.kind === 'touch') touch = r;
    else return undefined;
  }
  if (touch === undefined) return undefined;
  return {
    // Named: prepared once per session, not planned again for every commit.
    name: 'payouts-commit',
    text: ONE_STATEMENT,
    values: [
      run,
      ...intent,
      ...columnsOf(results, 8),
      ...columnsOf(reports, 7),
      touch.lastReq,
      touch.at,
    ],
  };
}

/** The rows of a run among these references that have no stated result. */
const OPEN_ROWS = `SELECT p.row FROM payouts p WHERE p.run = $1 AND p.reference_id = ANY($2::text[])
  AND NOT EXISTS (SELECT 1 FROM results d WHERE d.run = p.run AND d.row = p.row)`;

/** Writes one record of a run's journal; the same effect as RunState's local statements. */
async function applyRecord(c: pg.Client, run: number, r: JournalRecord): Promise<void> {
  switch (r.kind) {
    case 'intent':
      await c.query(
        `INSERT INTO intents (run, row, state, req, sent_at, note, updated_at)
         SELECT $1, x, 'in_flight', $2, $3, NULL, $3 FROM unnest($4::int[]) AS x
         ON CONFLICT (run, row) DO UPDATE SET state = 'in_flight', req = excluded.req,
           sent_at = excluded.sent_at, note = NULL, updated_at = excluded.updated_at`,
        [run, r.req, r.at, r.rows],
      );
      return;
    case 'seen':
      await c.query(
        `INSERT INTO intents (run, row, state, req, sent_at, updated_at)
         SELECT $1, row, 'in_flight', $3, $4, $4 FROM (${OPEN_ROWS}) o
         ON CONFLICT (run, row) DO NOTHING`,
        [run, r.refs, r.req, r.at],
      );
      return;
    case 'done':
      await c.query(
        `INSERT INTO results (run, row, req, status, transaction_id, charges, message, at)
         SELECT $1, p.row, $2, j.status, j.tx, j.charges, j.message, $3
         FROM unnest($4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
           AS j(ref, status, tx, charges, message)
           JOIN payouts p ON p.run = $1 AND p.reference_id = j.ref
         ON CONFLICT (run, row) DO UPDATE SET req = excluded.req, status = excluded.status,
           transaction_id = excluded.transaction_id, charges = excluded.charges,
           message = excluded.message, at = excluded.at`,
        [run, r.req, r.at, ...[0, 1, 2, 3, 4].map((k) => r.list.map((x) => x[k]))],
      );
      return;
    case 'not-applied':
      await c.query(
        `UPDATE intents SET state = 'free', note = $4, updated_at = $5
         WHERE run = $1 AND row IN (${OPEN_ROWS}) AND state IN ('in_flight', 'unknown')
           AND ($3 = -1 OR req = $3)`,
        [run, r.refs, r.req, r.why, r.at],
      );
      return;
    case 'unknown':
      await c.query(
        `INSERT INTO intents (run, row, state, req, sent_at, note, updated_at)
         SELECT $1, row, 'unknown', -1, $4, $3, $4 FROM (${OPEN_ROWS}) o
         ON CONFLICT (run, row) DO UPDATE SET state = 'unknown', note = excluded.note,
           updated_at = excluded.updated_at,
           req = CASE WHEN intents.state = 'free' THEN -1 ELSE intents.req END,
           sent_at = CASE WHEN intents.state = 'free' THEN excluded.sent_at ELSE intents.sent_at END`,
        [run, r.refs, r.why, r.at],
      );
      return;
    case 'results':
      await upsertRows(c, run, r.values, 8);
      return;
    case 'reports':
      await upsertRows(c, run, r.values, 7);
      return;
    case 'touch':
      await c.query(
        'UPDATE runs SET last_req = greatest(last_req, $1), updated_at = $2 WHERE id = $3',
        [r.lastReq, r.at, run],
      );
      return;
  }
}

/** Writes rows of `results` (8 values each) or `reports` (7), under the shared run's id. */
async function upsertRows(
  c: pg.Client,
  run: number,
  values: unknown[],
  width: 7 | 8,
): Promise<void> {
  const cols = columnsOf(values, width);
  if (width === 8) {
    await c.query(
      `INSERT INTO results (run, row, req, status, transaction_id, charges, message, at)
       SELECT $1, * FROM unnest($2::int[], $3::int[], $4::text[], $5::text[], $6::text[],
         $7::text[], $8::text[])
       ON CONFLICT (run, row) DO UPDATE SET req = excluded.req, status = excluded.status,
         transaction_id = excluded.transaction_id, charges = excluded.charges,
         message = excluded.message, at = excluded.at`,
      [run, ...cols],
    );
    return;
  }
  await c.query(
    `INSERT INTO reports (run, row, status, transaction_id, charges, message, sent_earlier)
     SELECT $1, * FROM unnest($2::int[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int[])
     ON CONFLICT (run, row) DO UPDATE SET status = excluded.status,
       transaction_id = excluded.transaction_id, charges = excluded.charges,
       message = excluded.message, sent_earlier = excluded.sent_earlier`,
    [run, ...cols],
  );
}
