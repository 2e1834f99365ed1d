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
import { PayoutsError } from '../../errors.js';
import { serviceId } from '../hash.js';
import { placeholders } from '../dialect.js';
import { JOURNAL_SQL, lookupSql, pgText, recordStatements } from '../journal-sql.js';
import type { PriorRow } from '../../domain/history.js';
import { type PriorHit, priorOfPage } from '../prior.js';
import { type ChainHit, ChainWalk } from '../chains.js';
import type { JournalMirror, StagedPayout } from '../../domain/records.js';
import type { RunClaims, ServiceLock } from '../../domain/history.js';
import { sessionClaims } from './run-claims.js';
import { readySession, sessionName } from './migrate.js';
import { CopyProgress, lastRowOf, rowsNeeded } from './copy.js';
import { connectTo, failure, namingOwner } from './failure.js';
import { insertPayouts, oneStatement, sameRows } from './statements.js';
import { type Adopting, adoption } from '../adopt.js';
import { type Sender, thisMachine } from '../intake.js';
import { type HistoryProbe, probeHistory } from './probe.js';
import { redactPasswords, redactStateUrl } from './url.js';
import {
  type LockHolder,
  releaseServiceLock,
  takeServiceLock,
  WaiterPlace,
  type WaiterSession,
} from './service-lock.js';

export type { HistoryProbe, LockHolder };

const SQL = JOURNAL_SQL.pg;
const LOOKUP = lookupSql('pg');

/** Who asks for a service's lock: the holder it records, host and user the machine's unless given. */
export type LockMe = Omit<LockHolder, 'host' | 'user'> & {
  host?: string;
  user?: string;
  runId?: string;
};

/** The run a send adopts in the shared history. */
export interface SharedRun {
  id: number;
  resumed: boolean;
  lastReq: number;
  /** How far its payouts are copied in (all of them when resumed). */
  copied: CopyProgress;
}

/** A connection to a shared history. */
export class PgHistory {
  /** Queries one after the other: a transaction's statements must not interleave with others'. */
  private queue: Promise<unknown> = Promise.resolve();
  /** Who sends through this session once it holds a lock: recorded with the runs it adopts. */
  private sender: LockHolder | undefined;
  /** Runs' payouts still being copied in, awaited by close(). */
  private readonly copying: Array<Promise<void>> = [];
  /** The session as the server names it (payouts_session()): what its attempts carry. */
  private me = '';
  /** Service locks this session holds: while any is held, a lost session is not replaced. */
  private locksHeld = 0;
  /** Whether the session's connection was lost (the server stopped, the network dropped). */
  private connectionLost = false;
  /** Services the history was seen to hold runs of (hasRuns). */
  private readonly withRuns = new Set<string>();

  private constructor(
    private client: pg.Client,
    private readonly url: string,
  ) {
    this.watch(client);
  }

  /** Notes when a session's connection ends: only the waiting may then take another. */
  private watch(client: pg.Client): void {
    const lost = () => {
      if (client === this.client) this.connectionLost = true;
    };
    client.on('end', lost);
    client.on('error', lost);
  }

  /** Whether the session was lost. */
  get lost(): boolean {
    return this.connectionLost;
  }

  /**
   * A new session in place of a lost one, for a send that waits for the lock (send --wait):
   * refused once this session held a lock or recorded a run, whose work died with it.
   */
  async reconnect(): Promise<void> {
    if (this.locksHeld > 0 || this.sender !== undefined || this.copying.length > 0) {
      throw new PayoutsError(
        `the connection to the shared history at ${this.where} was lost while this run held its lock: run the same command again; it reads back what this run left in doubt`,
      );
    }
    const fresh = await connectTo(this.url);
    const old = this.client;
    this.client = fresh;
    this.connectionLost = false;
    this.watch(fresh);
    await old.end().catch(() => {});
    // Another session, another name: its attempts carry this one's (the server checks).
    await this.nameSession();
  }

  /** Asks the server the session's name (payouts_session()), which its attempts carry. */
  private async nameSession(): Promise<void> {
    this.me = await this.serial('naming its session', sessionName);
  }

  /** The address as it may be shown. */
  get where(): string {
    return redactStateUrl(this.url);
  }

  /**
   * Connects (TLS as the URL's sslmode says; `stop` ends the wait at once) and brings the
   * schema up to date.
   */
  static async open(url: string, stop?: AbortSignal): Promise<PgHistory> {
    const history = new PgHistory(await connectTo(url, stop), url);
    try {
      history.me = await readySession({
        serial: (doing, work) => history.serial(doing, work),
        tx: (doing, work) => history.tx(doing, work),
        where: history.where,
      });
    } catch (err) {
      await history.close();
      throw err;
    }
    return history;
  }

  /** Connects without changing anything and says what is there: `config check`'s look. */
  static probe(url: string): Promise<HistoryProbe> {
    return probeHistory(url);
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
      () => namingOwner(this.client, work),
      () => namingOwner(this.client, work),
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

  /**
   * Takes the service's lock for this session, and records who holds it and which run; a
   * BusyError naming the holder's user, host, start time and what it is doing when another
   * session holds it, or the first of the sends queued for it. `ticket`: the waiter whose
   * turn it may be (WaiterPlace).
   */
  async lockService(serviceKey: string, me: LockMe, ticket?: number): Promise<ServiceLock> {
    const service = serviceId(serviceKey);
    const holder = this.holderOf(me);
    await this.serial('taking the run lock', (c) =>
      takeServiceLock(c, {
        service,
        holder,
        where: this.where,
        ...(me.runId ? { runId: me.runId } : {}),
        ...(ticket !== undefined ? { ticket } : {}),
      }),
    );
    this.sender = holder;
    this.locksHeld += 1;
    let released = false;
    return {
      release: async () => {
        if (released) return;
        released = true;
        this.locksHeld -= 1;
        await this.serial('giving back the run lock', (c) =>
          releaseServiceLock(c, service, holder),
        );
      },
    };
  }

  /** Who `me` is as the lock records it: the machine's host and user unless given. */
  private holderOf(me: LockMe): LockHolder {
    return {
      host: me.host ?? osHostname(),
      user: me.user ?? userInfo().username,
      pid: me.pid,
      started_at: me.started_at,
      // Every role that shares the history reads this row, and every sender who meets the
      // lock is shown it: no password of any URL in it (issue 48).
      command: redactPasswords(me.command),
    };
  }

  /** This send's claims on runs (RunClaims): advisory locks of this session. */
  runClaims(): RunClaims {
    return sessionClaims((doing, work) => this.serial(doing, work));
  }

  /** Joins the queue of the sends waiting for the service's lock (send --wait), last. */
  joinLockQueue(serviceKey: string, me: LockMe): Promise<WaiterPlace> {
    const session: WaiterSession = {
      where: this.where,
      read: (doing, work) => this.serial(doing, work),
      lockAs: (ticket) => this.lockService(serviceKey, me, ticket),
      isLost: () => this.lost,
      reconnect: () => this.reconnect(),
    };
    return WaiterPlace.join(session, serviceId(serviceKey), this.holderOf(me));
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
      const refs = JSON.stringify(page.map((p) => p.reference_id));
      const r = await this.serial('looking up earlier sends', (c) =>
        c.query<PriorHit>(pgText(LOOKUP.prior), [refs, service]),
      );
      priorOfPage(page, r.rows, out);
      const walk = new ChainWalk(page, out);
      for (let q = walk.next(); q; q = walk.next()) {
        const found = await this.serial('looking up retries', (c) =>
          c.query<ChainHit>(pgText(LOOKUP[q.query]), [q.refs, service]),
        );
        walk.take(q, found.rows);
      }
    }
    return out;
  }

  /**
   * Whether the history holds any run of the service. Once it does it always will (a run is
   * never deleted, nor moved to another service but by a migration): asked once a session.
   */
  async hasRuns(serviceKey: string): Promise<boolean> {
    const service = serviceId(serviceKey);
    if (this.withRuns.has(service)) return true;
    const r = await this.serial('looking up the service', (c) =>
      c.query(pgText(LOOKUP.hasRuns), [service]),
    );
    if (r.rows.length > 0) this.withRuns.add(service);
    return r.rows.length > 0;
  }

  /**
   * Adopts a send's staged payouts as its run (adopt.ts: resumed when a run of the same id
   * holds the very same payouts, otherwise recorded anew), with its first page of payouts;
   * the rest follow while it sends. `a.sender` undefined: a resumed run keeps who sent it.
   */
  async adopt(a: Adopting, pages: () => Iterable<StagedPayout[]>): Promise<SharedRun> {
    const rest = pages()[Symbol.iterator]();
    const run = await this.tx('recording the run', async (c) => {
      const steps = adoption('pg', a, 0);
      let answer: unknown;
      let s = steps.next();
      for (; !s.done; s = steps.next(answer)) {
        const step = s.value;
        if ('same' in step) answer = await sameRows(c, step.same, pages());
        else if ('get' in step) answer = (await c.query(pgText(step.get), step.params)).rows[0];
        else await c.query(pgText(step.run), step.params);
      }
      const { id, resumed } = s.value;
      if (resumed) {
        const n = await c.query<{ n: number }>(pgText(SQL.lastReq), [id]);
        const copied = new CopyProgress(a.header.payout_count, true);
        return { id, resumed, lastReq: n.rows[0]?.n ?? 0, copied };
      }
      // The first page goes with the run; the rest follow while it sends (copyRest).
      const first = rest.next();
      if (!first.done) await insertPayouts(c, id, first.value);
      const rows = first.done ? 0 : lastRowOf(first.value) + 1;
      return { id, resumed, lastReq: 0, copied: new CopyProgress(rows, first.done === true) };
    });
    if (!run.resumed) this.copyRest(run, rest);
    return run;
  }

  /** This session as the server names it: the attempts and withdrawals it records carry it. */
  get session(): string {
    return this.me;
  }

  /** Who sends through this session: the lock's holder, else this machine. */
  get senderOf(): Sender {
    return this.sender ? { host: this.sender.host, user: this.sender.user } : thisMachine();
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
    })().catch((err: unknown) =>
      run.copied.fail(
        err instanceof PayoutsError ? err : failure(err, this.url, 'copying the run'),
      ),
    );
    this.copying.push(copying);
  }

  /** Another session on the same database. */
  private connect(): Promise<pg.Client> {
    return connectTo(this.url);
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
        const statements = records.flatMap((r) => recordStatements(run, r, 'pg'));
        const quick = oneStatement(records, statements);
        if (quick) return this.serial('recording what was sent', (c) => c.query(quick).then());
        return this.tx('recording what was sent', async (c) => {
          for (const s of statements) await c.query(pgText(s.sql), s.params);
        });
      },
    };
  }

  /** Rows of a query written with `?` placeholders, as state.db's are (listing runs). */
  rows(sql: string, params: unknown[]): Promise<unknown[]> {
    const text = placeholders(sql, 'pg');
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
