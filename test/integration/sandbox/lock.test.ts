import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { isPidAlive } from '../../../src/lock.js';
import { acquireLock } from '../../../src/sandbox/lock.js';
import { tempState } from '../../unit/sandbox/helpers.js';

const temps: Array<{ cleanup(): void }> = [];
afterEach(() => {
  for (const t of temps.splice(0)) t.cleanup();
});

/** A lock path in a fresh temp folder. */
function lockPath(): string {
  const t = tempState();
  temps.push(t);
  return join(t.dir, 'ledger.lock');
}

/** A lock file as another process would have written it. */
function lockText(pid: number, token: string): string {
  return `${JSON.stringify({ pid, hostname: hostname(), started_at: 'then', command: 'payouts sandbox', token })}\n`;
}

/** The pid a lock file names. */
function holder(path: string): number {
  return (JSON.parse(readFileSync(path, 'utf8')) as { pid: number }).pid;
}

/** A pid that certainly no longer runs: a child that has exited. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
  return Number(r.stdout.toString());
}

describe('file lock', () => {
  it('is exclusive: a second taker waits for the release', async () => {
    const path = lockPath();
    const release = await acquireLock(path);
    expect(holder(path)).toBe(process.pid);
    let second = false;
    const waiting = acquireLock(path).then((r) => {
      second = true;
      return r;
    });
    await sleep(80);
    expect(second).toBe(false);
    await release();
    const release2 = await waiting;
    expect(second).toBe(true);
    await release2();
    expect(existsSync(path)).toBe(false);
  });

  it('breaks a lock whose pid is dead', async () => {
    const path = lockPath();
    const pid = deadPid();
    expect(isPidAlive(pid)).toBe(false);
    writeFileSync(path, lockText(pid, 'abc'));
    const release = await acquireLock(path, { timeoutMs: 2000 });
    expect(holder(path)).toBe(process.pid);
    await release();
  });

  it('breaks a lock older than the stale age, even of a live pid', async () => {
    const path = lockPath();
    writeFileSync(path, lockText(process.pid, 'old'));
    await expect(acquireLock(path, { timeoutMs: 50 })).rejects.toThrow(/held by pid/);
    const old = new Date(Date.now() - 11_000);
    utimesSync(path, old, old);
    const release = await acquireLock(path, { timeoutMs: 2000 });
    expect(holder(path)).toBe(process.pid);
    await release();
  });

  it('gives up on a live, fresh lock after the timeout, naming the holder', async () => {
    const path = lockPath();
    writeFileSync(path, lockText(process.pid, 'other'));
    await expect(acquireLock(path, { timeoutMs: 100 })).rejects.toThrow(
      new RegExp(`held by pid ${process.pid}`),
    );
  });

  it('does not remove a lock that another process took over', async () => {
    const path = lockPath();
    const release = await acquireLock(path);
    writeFileSync(path, lockText(999999, 'someone-else'));
    await release();
    expect(readFileSync(path, 'utf8')).toBe(lockText(999999, 'someone-else'));
  });
});
