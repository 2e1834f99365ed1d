/**
 * A service's lock on a shared history: a session-level advisory lock, which the server gives
 * back by itself when the session ends; the table `locks` says who holds it, and
 * `lock_waiters` who waits for it (send --wait), served in the order they asked. A waiter is
 * there while its session holds the advisory lock of its ticket, so a waiter that died, or
 * lost its connection, is passed over.
 */
import type pg from 'pg';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ServiceLock } from '../../domain/history.js';
import { BusyError } from '../../errors.js';
import { isPidAlive } from '../../lock.js';
import { processScope } from '../../proc.js';
import { ADVISORY_CLASS } from '../runs.js';
import { count } from '../../output/display.js';
import { redactPasswords } from './url.js';

/** The first key of every advisory lock payouts takes ("payo"). */
export const LOCK_CLASS = ADVISORY_CLASS;
/** The first key of a waiter's ticket lock ("payw"), held by its session while it waits. */
export const WAITER_CLASS = 0x70617977;
/** How long a send gives the server to end the session of a holder that has ended. */
const DEAD_HOLDER_MS = 3_000;

/** Who holds a service's lock, as the holder wrote it. */
export interface LockHolder {
  host: string;
  user: string;
  pid: number;
  started_at: string;
  command: string;
}

/** The 32-bit lock key of a service: the first 8 hex digits of its id. */
export function lockKey(service: string): number {
  return Number.parseInt(service.slice(0, 8), 16) | 0;
}

/** An advisory lock of ours as pg_locks shows it: its keys, the second as an oid. */
const ADVISORY = (classid: string, objid: string) =>
  `k.locktype = 'advisory' AND k.granted AND k.objsubid = 2 AND k.classid = ${classid}
   AND k.objid::bigint = (${objid}::bigint + 4294967296) % 4294967296`;

/** A waiter whose session still holds its ticket's lock. */
const LIVE_WAITER = `EXISTS (SELECT 1 FROM pg_locks k WHERE ${ADVISORY(String(WAITER_CLASS), 'w.ticket')})`;

/** What one send's lock request is about. */
export interface LockAsk {
  service: string;
  holder: LockHolder;
  runId?: string;
  /** The waiter's ticket, when it waits in the queue (send --wait). */
  ticket?: number;
  /** The history, as messages name it. */
  where: string;
}

/** The first of the waiters ahead, and how many there are. */
interface Queue {
  n: number;
  first?: { host: string; os_user: string; db_user: string; started_at: string };
}

/** The live waiters for a service's lock before `ticket` (all of them without one). */
async function waitersBefore(c: pg.Client, service: string, ticket?: number): Promise<Queue> {
  const r = await c.query<NonNullable<Queue['first']> & { n: string }>(
    `SELECT w.host, w.os_user, w.db_user, w.started_at, count(*) OVER () AS n
     FROM lock_waiters w WHERE w.service_id = $1 AND ($2::int IS NULL OR w.ticket < $2)
       AND ${LIVE_WAITER}
     ORDER BY w.ticket LIMIT 1`,
    [service, ticket ?? null],
  );
  const first = r.rows[0];
  return first ? { n: Number(first.n), first } : { n: 0 };
}

/** The holder's row, and whether its session holds the lock now. */
interface HolderRow {
  host: string;
  os_user: string;
  db_user: string | null;
  pid: number;
  started_at: string;
  command: string;
  phase: string;
  backend_pid: number | null;
  scope: string | null;
  holding: boolean;
}

/** Who the locks table says holds a service's lock. */
async function holderOf(c: pg.Client, service: string): Promise<HolderRow | undefined> {
  const r = await c.query<HolderRow>(
    `SELECT l.host, l.os_user, l.db_user, l.pid, l.started_at, l.command, l.phase,
       l.backend_pid, l.scope, EXISTS (SELECT 1 FROM pg_locks k
         WHERE k.pid = l.backend_pid AND ${ADVISORY(String(LOCK_CLASS), '$2')}) AS holding
     FROM locks l WHERE l.service_id = $1`,
    [service, lockKey(service)],
  );
  return r.rows[0];
}

/**
 * Whether the holder is a process of this host (and of this process's scope, so its pid
 * means the same here) that has ended, a zombie included, while its session lingers.
 */
function endedHere(h: HolderRow, host: string): boolean {
  const scope = processScope();
  return h.holding && h.host === host && scope !== '' && h.scope === scope && !isPidAlive(h.pid);
}

async function tryLock(c: pg.Client, key: number): Promise<boolean> {
  const got = await c.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS ok', [
    LOCK_CLASS,
    key,
  ]);
  return got.rows[0]?.ok === true;
}

/**
 * A holder of this host that has ended (killed, or a zombie its parent has not reaped) whose
 * session the server has not ended yet: its session is ended (as its role, or one granted
 * pg_signal_backend, may) and the lock taken once the server gives it back. False when it is
 * not such a holder, or its session may not be ended from here.
 */
async function takeFromEnded(c: pg.Client, ask: LockAsk, key: number): Promise<boolean> {
  const h = await holderOf(c, ask.service);
  if (!h || !endedHere(h, ask.holder.host)) return false;
  try {
    await c.query('SELECT pg_terminate_backend($1)', [h.backend_pid]);
  } catch (err) {
    if ((err as { code?: string }).code === '42501') return false;
    throw err;
  }
  for (let waited = 0; waited < DEAD_HOLDER_MS; waited += 50) {
    if (await tryLock(c, key)) return true;
    await sleep(50);
  }
  return false;
}

/**
 * Takes the lock of `ask.service` for this session and records who holds it and which run,
 * unless sends that asked first wait for it; a BusyError naming the holder (or the first
 * waiter) and how many wait ahead otherwise.
 */
export async function takeServiceLock(c: pg.Client, ask: LockAsk): Promise<void> {
  const key = lockKey(ask.service);
  const queue = await waitersBefore(c, ask.service, ask.ticket);
  if (queue.n > 0) throw busyError(ask, await holderOf(c, ask.service), queue);
  if (!(await tryLock(c, key)) && !(await takeFromEnded(c, ask, key))) {
    throw busyError(ask, await holderOf(c, ask.service), queue);
  }
  const { holder } = ask;
  await c.query(
    `INSERT INTO locks (service_id, host, os_user, pid, started_at, command, db_user, run_id,
       phase, backend_pid, scope)
     VALUES ($1, $2, $3, $4, $5, $6, session_user, $7, 'sending', pg_backend_pid(), $8)
     ON CONFLICT (service_id) DO UPDATE SET host = excluded.host, os_user = excluded.os_user,
       pid = excluded.pid, started_at = excluded.started_at, command = excluded.command,
       db_user = excluded.db_user, run_id = excluded.run_id, phase = excluded.phase,
       backend_pid = excluded.backend_pid, scope = excluded.scope`,
    [
      ask.service,
      holder.host,
      holder.user,
      holder.pid,
      holder.started_at,
      // Read by every role sharing the history: no password of any URL (issue 48).
      redactPasswords(holder.command),
      ask.runId ?? null,
      processScope(),
    ],
  );
  if (ask.ticket !== undefined) await leaveQueue(c, ask.ticket);
}

/** Gives a service's lock back, and the row that names this session's holder. */
export async function releaseServiceLock(
  c: pg.Client,
  service: string,
  holder: LockHolder,
): Promise<void> {
  await c.query('DELETE FROM locks WHERE service_id = $1 AND host = $2 AND pid = $3', [
    service,
    holder.host,
    holder.pid,
  ]);
  await c.query('SELECT pg_advisory_unlock($1, $2)', [LOCK_CLASS, lockKey(service)]);
}

/** "1 send waits", "2 sends wait". */
const sendsWait = (n: number) => count(n, 'send waits', 'sends wait');

/** The error for a service whose lock another session holds, or that sends asked for first. */
function busyError(ask: LockAsk, h: HolderRow | undefined, queue: Queue): BusyError {
  const { where } = ask;
  const first = queue.first;
  if (!h?.holding && first) {
    const role = first.db_user !== first.os_user ? `, database role ${first.db_user}` : '';
    return new BusyError(
      `${sendsWait(queue.n)} for the lock of this service in the shared history at ${where}, which goes to them in the order they asked (the first: ${first.os_user}@${first.host}${role}, waiting since ${first.started_at}); nothing was sent. Run again with --wait to wait your turn`,
      `${first.os_user}@${first.host}, waiting since ${first.started_at}`,
      queue.n,
    );
  }
  const role = h?.db_user ? `, database role ${h.db_user}` : '';
  // A run takes the lock only once its question is answered, so its holder is sending.
  const doing = h?.phase ?? 'sending';
  const who = h
    ? `on host ${h.host}, user ${h.os_user}${role}, pid ${h.pid}, started ${h.started_at}, ${doing}: ${JSON.stringify(redactPasswords(h.command))}`
    : 'it has not recorded its host yet';
  const short = h ? `${h.os_user}@${h.host}, ${doing} since ${h.started_at}` : 'another send';
  const queued = queue.n > 0 ? `; ${sendsWait(queue.n)} for it before this one` : '';
  if (h && endedHere(h, ask.holder.host)) {
    return new BusyError(
      `the payouts send holding the lock of this service in the shared history at ${where} (${who}) has ended, but its database session (backend pid ${h.backend_pid}) still holds the lock${queued}; nothing was sent. The server gives it back once it notices; to end that session now, its role or an administrator runs SELECT pg_terminate_backend(${h.backend_pid}); then run again`,
      short,
      queue.n,
    );
  }
  return new BusyError(
    `another payouts send to this service is running, sharing the history at ${where} (${who})${queued}; nothing was sent. Wait for it to finish, or run again with --wait to wait for it: its lock is given back when it ends, or when its connection to the database does`,
    short,
    queue.n,
  );
}

/**
 * Joins the queue of a service's lock, last: the waiter's row and its ticket's lock, which
 * this session holds while it waits. Waiters gone are cleared on the way.
 */
export async function joinQueue(c: pg.Client, service: string, me: LockHolder): Promise<number> {
  await c.query(`DELETE FROM lock_waiters w WHERE w.service_id = $1 AND NOT ${LIVE_WAITER}`, [
    service,
  ]);
  const r = await c.query<{ ticket: number }>(
    `WITH w AS (INSERT INTO lock_waiters (service_id, host, os_user, pid, started_at)
       VALUES ($1, $2, $3, $4, $5) RETURNING ticket)
     SELECT ticket, pg_advisory_lock(${WAITER_CLASS}, ticket) FROM w`,
    [service, me.host, me.user, me.pid, me.started_at],
  );
  return r.rows[0]!.ticket;
}

/**
 * Takes a waiter's place again on a new session (its connection was lost): the same ticket,
 * so the same place, its row written again if it was cleared meanwhile. False while the old
 * session still holds the ticket's lock (the server has not ended it yet).
 */
export async function rejoinQueue(
  c: pg.Client,
  service: string,
  me: LockHolder,
  ticket: number,
): Promise<boolean> {
  const r = await c.query<{ ok: boolean }>(
    `WITH w AS (INSERT INTO lock_waiters (ticket, service_id, host, os_user, pid, started_at)
       VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (ticket) DO NOTHING)
     SELECT pg_try_advisory_lock(${WAITER_CLASS}, $1) AS ok`,
    [ticket, service, me.host, me.user, me.pid, me.started_at],
  );
  return r.rows[0]?.ok === true;
}

/** Leaves the queue: the waiter's row and its ticket's lock. */
export async function leaveQueue(c: pg.Client, ticket: number): Promise<void> {
  await c.query('DELETE FROM lock_waiters WHERE ticket = $1', [ticket]);
  await c.query('SELECT pg_advisory_unlock($1, $2)', [WAITER_CLASS, ticket]);
}

/** What a waiter needs of its history's session. */
export interface WaiterSession {
  /** The history, as messages name it. */
  readonly where: string;
  /** Runs `work` on the session, after what is queued on it. */
  read<T>(doing: string, work: (c: pg.Client) => Promise<T>): Promise<T>;
  /** Takes the lock as the waiter of `ticket` (see takeServiceLock). */
  lockAs(ticket: number): Promise<ServiceLock>;
  /** Whether the session's connection was lost (the server stopped, the network dropped). */
  isLost(): boolean;
  /** A new session in place of a lost one; throws while the server cannot be reached. */
  reconnect(): Promise<void>;
}

/**
 * A send's place in the queue of a service's lock (send --wait). A lost connection costs it
 * nothing: each try reconnects, takes the same ticket again, and goes on waiting; while the
 * server cannot be reached, a try is a BusyError whose cause says why (past the wait's
 * limit, that cause is the error: exit 7).
 */
export class WaiterPlace {
  private holdsTicket = true;
  private lostHere = false;
  private left = false;

  private constructor(
    private readonly session: WaiterSession,
    private readonly service: string,
    private readonly me: LockHolder,
    private readonly ticket: number,
  ) {}

  /** Joins the queue of `service`, last. */
  static async join(s: WaiterSession, service: string, me: LockHolder): Promise<WaiterPlace> {
    const ticket = await s.read('joining the queue for the run lock', (c) =>
      joinQueue(c, service, me),
    );
    return new WaiterPlace(s, service, me, ticket);
  }

  /** The lock, in turn; a BusyError while others hold it or are ahead, or the server is away. */
  async take(): Promise<ServiceLock> {
    try {
      if (this.lostHere || this.session.isLost()) {
        await this.session.reconnect();
        this.lostHere = false;
      }
      if (!this.holdsTicket) {
        this.holdsTicket = await this.session.read('waiting for the run lock', (c) =>
          rejoinQueue(c, this.service, this.me, this.ticket),
        );
      }
      const lock = await this.session.lockAs(this.ticket);
      this.left = true;
      return lock;
    } catch (err) {
      if (err instanceof BusyError || (await this.connected())) throw err;
      this.lostHere = true;
      this.holdsTicket = false;
      throw new BusyError(
        (err as Error).message,
        `the shared history at ${this.session.where}, which cannot be reached`,
        0,
        { cause: err },
      );
    }
  }

  /** Whether the session still answers: a failure that leaves it answering is not a lost one. */
  private async connected(): Promise<boolean> {
    if (this.lostHere || this.session.isLost()) return false;
    try {
      await this.session.read('checking the connection', (c) => c.query('SELECT 1'));
      return true;
    } catch {
      return false;
    }
  }

  /** Leaves the queue; harmless once the lock is taken or the place left. */
  async leave(): Promise<void> {
    if (this.left) return;
    this.left = true;
    if (this.lostHere || this.session.isLost()) return;
    await this.session.read('leaving the queue for the run lock', (c) =>
      leaveQueue(c, this.ticket),
    );
  }
}
