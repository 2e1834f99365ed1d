import { join } from 'node:path';
import type { RunClaims } from '../domain/history.js';
import { BusyError, UsageError } from '../errors.js';
import { FileLock, type FileLockOptions, FileLockQueue, type LockInfo } from '../lock.js';
import { serviceId, sha256Hex16 } from './hash.js';
import { count } from '../output/display.js';
import { redactPasswords } from './pg/url.js';

/** Options of acquireSendLock. */
export interface SendLockOptions {
  stateDir: string;
  serviceKey: string;
  pid: number;
  /** The command line, so that a second run can name the first. */
  command: string;
  isAlive?: (pid: number) => boolean;
  hostname?: string;
  now?: () => Date;
}

/** Where the send lock of a service is. */
export function sendLockPath(stateDir: string, serviceKey: string): string {
  return join(stateDir, 'locks', `send-${serviceId(serviceKey)}.lock`);
}

/** "1 send waits", "2 sends wait". */
const sendsWait = (n: number) => count(n, 'send waits', 'sends wait');

/**
 * The error for a send lock held by a running (or unverifiable) process, or free while
 * `waiting` (the sends that asked before this one, in order) wait for it.
 */
function busyError(
  holder: LockInfo | undefined,
  path: string,
  ownHost: string,
  waiting: LockInfo[],
): BusyError {
  const first = (holder ?? waiting[0])!;
  const where = first.hostname === ownHost ? '' : ` on host ${first.hostname}`;
  if (!holder) {
    return new BusyError(
      `${sendsWait(waiting.length)} for the lock of this service, which goes to them in the order they asked (the first: pid ${first.pid}${where}, waiting since ${first.started_at}); nothing was sent. Run again with --wait to wait your turn`,
      `pid ${first.pid} on ${first.hostname}, waiting since ${first.started_at}`,
      waiting.length,
    );
  }
  const hint =
    holder.hostname === ownHost
      ? ''
      : `; if no payouts send is running there, delete ${path} and try again`;
  const queue = waiting.length ? `; ${sendsWait(waiting.length)} for it before this one` : '';
  return new BusyError(
    `another payouts send to this service is running (pid ${holder.pid}${where}, started ${holder.started_at}, sending: ${JSON.stringify(redactPasswords(holder.command))})${queue}; nothing was sent. Wait for it to finish, or run again with --wait to wait for it${hint}`,
    `pid ${holder.pid} on ${holder.hostname}, sending since ${holder.started_at}`,
    waiting.length,
  );
}

/** The file lock's options of a service's send lock. */
function lockOptions(opts: SendLockOptions): FileLockOptions {
  return {
    path: sendLockPath(opts.stateDir, opts.serviceKey),
    pid: opts.pid,
    // The lock file is read by other runs, which name its command: no password in it.
    command: redactPasswords(opts.command),
    busy: busyError,
    queue: true,
    ...(opts.isAlive ? { isAlive: opts.isAlive } : {}),
    ...(opts.hostname ? { hostname: opts.hostname } : {}),
    ...(opts.now ? { now: opts.now } : {}),
  };
}

/** Every failure to take the lock is the user's to resolve, and nothing was sent. */
function asUsage(err: unknown): never {
  if (
    err instanceof UsageError ||
    err instanceof BusyError ||
    !(err instanceof Error) ||
    'code' in err
  )
    throw err;
  throw new UsageError(err.message);
}

/**
 * One sending run per service on this machine; BusyError naming the process that holds it,
 * or the sends waiting for it (send --wait), which it goes to first.
 */
export async function acquireSendLock(opts: SendLockOptions): Promise<FileLock> {
  return FileLock.acquire(lockOptions(opts)).catch(asUsage);
}

/** A service's send lock, as a send --wait waits for it: `take` in turn, `leave` when done. */
export interface SendLockQueue {
  take(): Promise<FileLock>;
  leave(): Promise<void>;
}

/** Joins the queue of the sends waiting for a service's lock, last. */
export async function joinSendLockQueue(opts: SendLockOptions): Promise<SendLockQueue> {
  const place = await FileLockQueue.join(lockOptions(opts)).catch(asUsage);
  return {
    take: () => place.take().catch(asUsage),
    leave: () => place.leave(),
  };
}

/** Where a send's claim on a run is (RunClaims): a lock file named by the run's id, hashed. */
export function runClaimPath(stateDir: string, runId: string): string {
  return join(stateDir, 'locks', `run-${sha256Hex16(runId)}.lock`);
}

/** What FileLock throws for a run another live process claims. */
class ClaimedElsewhere extends Error {}

/**
 * A send's claims on runs in a state folder: a lock file each, naming this process, taken
 * over once its process has ended (src/lock.ts), so a send that died claims nothing.
 */
export function localRunClaims(opts: Omit<SendLockOptions, 'serviceKey'>): RunClaims {
  const held = new Map<string, FileLock>();
  return {
    async take(runIds) {
      const others = new Set<string>();
      for (const id of new Set(runIds)) {
        if (held.has(id)) continue;
        try {
          const lock = await FileLock.acquire({
            path: runClaimPath(opts.stateDir, id),
            pid: opts.pid,
            command: redactPasswords(opts.command),
            busy: () => new ClaimedElsewhere(),
            ...(opts.isAlive ? { isAlive: opts.isAlive } : {}),
          });
          held.set(id, lock);
        } catch (err) {
          if (!(err instanceof ClaimedElsewhere)) asUsage(err);
          others.add(id);
        }
      }
      return others;
    },
    async release() {
      const locks = [...held.values()];
      held.clear();
      await Promise.all(locks.map((l) => l.release().catch(() => {})));
    },
  };
}
