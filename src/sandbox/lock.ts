/** The sandbox ledger's cross-process lock: the shared file lock, waited for, held briefly. */
import { FileLock } from '../lock.js';

/** Options of lock acquisition. */
export interface LockOptions {
  /** A lock older than this is abandoned by a stuck or dead holder (default 10 s). */
  staleMs?: number;
  /** Give up after waiting this long (default 30 s). */
  timeoutMs?: number;
}

/** Releases a held lock. */
export type ReleaseLock = () => Promise<void>;

/** Takes the lock at `path`, waiting with short sleeps while another process holds it. */
export async function acquireLock(path: string, opts: LockOptions = {}): Promise<ReleaseLock> {
  const lock = await FileLock.acquire({
    path,
    pid: process.pid,
    command: 'payouts sandbox',
    waitMs: opts.timeoutMs ?? 30_000,
    staleAfterMs: opts.staleMs ?? 10_000,
    busy: (holder) =>
      new Error(
        `the sandbox ledger lock ${path} is held by pid ${holder?.pid}: retry, or remove the file if no sandbox is running`,
      ),
  });
  return () => lock.release();
}
