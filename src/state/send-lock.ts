import { join } from 'node:path';
import { UsageError } from '../errors.js';
import { FileLock, type LockInfo } from '../lock.js';
import { serviceId } from './hash.js';

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
function busyError(info: LockInfo, path: string, ownHost: string): UsageError {
  const where = info.hostname === ownHost ? '' : ` on host ${info.hostname}`;
  const hint =
    info.hostname === ownHost
      ? ''
      : `; if no payouts send is running there, delete ${path} and try again`;
  return new UsageError(
    `another payouts send to this service is running (pid ${info.pid}${where}, started ${info.started_at}, ${JSON.stringify(info.command)}); wait for it to finish${hint}`,
  );
}

/** One sending run per service on this machine; UsageError naming the process that holds it. */
export async function acquireSendLock(opts: SendLockOptions): Promise<FileLock> {
  const path = sendLockPath(opts.stateDir, opts.serviceKey);
  try {
    return await FileLock.acquire({
      path,
      pid: opts.pid,
      command: opts.command,
      busy: busyError,
      ...(opts.isAlive ? { isAlive: opts.isAlive } : {}),
      ...(opts.hostname ? { hostname: opts.hostname } : {}),
      ...(opts.now ? { now: opts.now } : {}),
    });
  } catch (err) {
    // Every failure to take the lock is the user's to resolve, and nothing was sent.
    if (err instanceof UsageError || !(err instanceof Error) || 'code' in err) throw err;
    throw new UsageError(err.message);
  }
}
