import { join } from 'node:path';
import { BusyError, UsageError } from '../errors.js';
import { FileLock, type LockInfo } from '../lock.js';
import { serviceId } from './hash.js';
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

/** The error for a send lock held by a running (or unverifiable) process. */
function busyError(info: LockInfo, path: string, ownHost: string): BusyError {
  const where = info.hostname === ownHost ? '' : ` on host ${info.hostname}`;
  const hint =
    info.hostname === ownHost
      ? ''
      : `; if no payouts send is running there, delete ${path} and try again`;
  return new BusyError(
    `another payouts send to this service is running (pid ${info.pid}${where}, started ${info.started_at}, sending: ${JSON.stringify(redactPasswords(info.command))}); nothing was sent. Wait for it to finish, or run again with --wait to wait for it${hint}`,
    `pid ${info.pid} on ${info.hostname}, sending since ${info.started_at}`,
  );
}

/** One sending run per service on this machine; BusyError naming the process that holds it. */
export async function acquireSendLock(opts: SendLockOptions): Promise<FileLock> {
  const path = sendLockPath(opts.stateDir, opts.serviceKey);
  try {
    return await FileLock.acquire({
      path,
      pid: opts.pid,
      // The lock file is read by other runs, which name its command: no password in it.
      command: redactPasswords(opts.command),
      busy: busyError,
      ...(opts.isAlive ? { isAlive: opts.isAlive } : {}),
      ...(opts.hostname ? { hostname: opts.hostname } : {}),
      ...(opts.now ? { now: opts.now } : {}),
    });
  } catch (err) {
    // Every failure to take the lock is the user's to resolve, and nothing was sent.
    if (
      err instanceof UsageError ||
      err instanceof BusyError ||
      !(err instanceof Error) ||
      'code' in err
    )
      throw err;
    throw new UsageError(err.message);
  }
}
