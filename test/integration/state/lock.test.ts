import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdir, readdir, readFile, stat, utimes, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { basename, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { BusyError, UsageError } from '../../../src/errors.js';
import { type FileLock, isPidAlive, type LockInfo } from '../../../src/lock.js';
import { procStat } from '../../../src/proc.js';
import { acquireSendLock, sendLockPath } from '../../../src/state/index.js';
import { SERVICE, tempStateDir } from '../../unit/state/helpers.js';

/** The send lock, as the tests take it. */
const RunLock = { acquire: acquireSendLock };
type RunLock = FileLock;

/** Path of SERVICE's lock in a state folder. */
function lockPath(stateDir: string): string {
  return sendLockPath(stateDir, SERVICE);
}

/** Writes a lock file as another process would have. */
async function plantLock(stateDir: string, info: Partial<LockInfo>): Promise<string> {
  const path = lockPath(stateDir);
  await mkdir(join(path, '..'), { recursive: true });
  const full: LockInfo = {
    pid: 1234,
    hostname: hostname(),
    started_at: '2026-01-02T03:04:05.000Z',
    command: 'payouts send x.csv',
    token: 'someone-else',
    ...info,
  };
  await writeFile(path, `${JSON.stringify(full)}\n`);
  return path;
}

/** The lock file's content. */
async function readLockFile(stateDir: string): Promise<LockInfo> {
  return JSON.parse(await readFile(lockPath(stateDir), 'utf8')) as LockInfo;
}

/** A pid that certainly belonged to a process which has exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', '0']);
  return child.pid!;
}

/**
 * A zombie: a child that has exited under a parent that never reaps it (a shell that forked it
 * and then became `sleep`, as `timeout -s KILL` leaves one until it reaps). Its pid, and a stop.
 */
async function zombie(): Promise<{ pid: number; stop(): void }> {
  // The child ends once its shell is `sleep`, which never reaps: a shell might reap it itself.
  const parent = spawn('sh', ['-c', '(sleep 0.1) & echo $!; exec sleep 30'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const pid = await new Promise<number>((resolve) =>
    parent.stdout.once('data', (d: Buffer) => resolve(Number(String(d).trim()))),
  );
  for (let i = 0; i < 200 && procStat(pid)?.state !== 'Z'; i++) await sleep(10);
  return { pid, stop: () => parent.kill('SIGKILL') };
}

describe('the send lock', () => {
  it('creates the lock file with pid, host, start time and command, mode 0600', async () => {
    const stateDir = await tempStateDir();
    const lock = await RunLock.acquire({
      stateDir,
      serviceKey: SERVICE,
      pid: 4242,
      command: 'payouts send a.csv',
      now: () => new Date('2026-03-04T05:06:07.000Z'),
    });
    const info = await readLockFile(stateDir);
    expect(info).toMatchObject({
      pid: 4242,
      hostname: hostname(),
      started_at: '2026-03-04T05:06:07.000Z',
      command: 'payouts send a.csv',
    });
    expect(lock.path).toBe(lockPath(stateDir));
    if (process.platform !== 'win32') {
      expect((await stat(lock.path)).mode & 0o777).toBe(0o600);
    }
    await lock.release();
    await expect(stat(lock.path)).rejects.toMatchObject({ code: 'ENOENT' });
    await lock.release(); // twice is harmless
  });

  it('refuses a second send while the first one runs, naming its pid and command', async () => {
    const stateDir = await tempStateDir();
    const first = await RunLock.acquire({
      stateDir,
      serviceKey: SERVICE,
      pid: 1111,
      command: 'payouts send first.csv',
      isAlive: () => true,
    });
    const err = await RunLock.acquire({
      stateDir,
      serviceKey: SERVICE,
      pid: 2222,
      command: 'payouts send second.csv',
      isAlive: () => true,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BusyError);
    expect((err as Error).message).toMatch(
      /^another payouts send to this service is running \(pid 1111, started .+, sending: "payouts send first\.csv"\); nothing was sent\. Wait for it to finish, or run again with --wait to wait for it$/,
    );
    expect((await readLockFile(stateDir)).pid).toBe(1111);
    await first.release();
  });

  it('allows one send per service: another service is not blocked', async () => {
    const stateDir = await tempStateDir();
    const a = await RunLock.acquire({ stateDir, serviceKey: SERVICE, pid: 1, command: 'a' });
    const b = await RunLock.acquire({ stateDir, serviceKey: 'sandbox', pid: 2, command: 'b' });
    expect(a.path).not.toBe(b.path);
    await a.release();
    await b.release();
  });

  it('uses the real process table by default: this process is alive', async () => {
    const stateDir = await tempStateDir();
    await plantLock(stateDir, { pid: process.pid });
    expect(isPidAlive(process.pid)).toBe(true);
    await expect(
      RunLock.acquire({ stateDir, serviceKey: SERVICE, pid: 99, command: 'c' }),
    ).rejects.toThrow(`pid ${process.pid}`);
  });

  it('takes over a stale lock whose process is gone', async () => {
    const stateDir = await tempStateDir();
    const pid = deadPid();
    expect(isPidAlive(pid)).toBe(false);
    await plantLock(stateDir, { pid });
    const lock = await RunLock.acquire({
      stateDir,
      serviceKey: SERVICE,
      pid: 5555,
      command: 'payouts send again.csv',
    });
    expect(await readLockFile(stateDir)).toMatchObject({
      pid: 5555,
      command: 'payouts send again.csv',
    });
    // No temporary or takeover files are left behind.
    expect(await readdir(join(lock.path, '..'))).toEqual([basename(lock.path)]);
    await lock.release();
  });

  it.runIf(process.platform === 'linux')(
    'takes over the lock of a zombie: killed, its parent not reaping it yet',
    async () => {
      const z = await zombie();
      try {
        expect(procStat(z.pid)?.state).toBe('Z');
        // The process table still has it: signal 0 alone would call it running.
        expect(() => process.kill(z.pid, 0)).not.toThrow();
        expect(isPidAlive(z.pid)).toBe(false);
        const stateDir = await tempStateDir();
        await plantLock(stateDir, { pid: z.pid });
        const lock = await RunLock.acquire({
          stateDir,
          serviceKey: SERVICE,
          pid: 77,
          command: 'c',
        });
        expect((await readLockFile(stateDir)).pid).toBe(77);
        await lock.release();
      } finally {
        z.stop();
      }
    },
  );

  it('never takes over the lock of another host, whose processes it cannot see', async () => {
    const stateDir = await tempStateDir();
    await plantLock(stateDir, { hostname: 'elsewhere' });
    const err = await RunLock.acquire({
      stateDir,
      serviceKey: SERVICE,
      pid: 7,
      command: 'c',
      isAlive: () => false,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BusyError);
    expect((err as Error).message).toContain('pid 1234 on host elsewhere');
    expect((err as Error).message).toContain(lockPath(stateDir));
    expect((await readLockFile(stateDir)).hostname).toBe('elsewhere');
  });

  it('takes over an unreadable lock only once it is old (a crash while writing it)', async () => {
    const stateDir = await tempStateDir();
    const path = lockPath(stateDir);
    await mkdir(join(path, '..'), { recursive: true });
    await writeFile(path, '');
    const old = new Date(Date.now() - 60_000);
    await utimes(path, old, old);
    const lock = await RunLock.acquire({ stateDir, serviceKey: SERVICE, pid: 8, command: 'c' });
    expect((await readLockFile(stateDir)).pid).toBe(8);
    await lock.release();
  });

  it('waits while a fresh lock is still being written, then sees its owner', async () => {
    const stateDir = await tempStateDir();
    const path = lockPath(stateDir);
    await mkdir(join(path, '..'), { recursive: true });
    await writeFile(path, '');
    setTimeout(() => {
      void plantLock(stateDir, { pid: 3333 });
    }, 100);
    await expect(
      RunLock.acquire({ stateDir, serviceKey: SERVICE, pid: 9, command: 'c', isAlive: () => true }),
    ).rejects.toThrow(/pid 3333/);
  });

  it('release leaves alone a lock that is no longer ours', async () => {
    const stateDir = await tempStateDir();
    const lock = await RunLock.acquire({ stateDir, serviceKey: SERVICE, pid: 10, command: 'c' });
    // Someone took the lock over (say, they judged us dead).
    await plantLock(stateDir, { pid: 11, token: 'theirs' });
    await lock.release();
    expect(await readLockFile(stateDir)).toMatchObject({ pid: 11, token: 'theirs' });
  });

  it('reports a takeover left half-done by a dead process instead of guessing', async () => {
    const stateDir = await tempStateDir();
    const path = await plantLock(stateDir, { pid: 20 });
    await writeFile(
      `${path}.takeover`,
      JSON.stringify({
        pid: 21,
        hostname: hostname(),
        started_at: 'x',
        command: 'c',
        token: 't',
      }),
    );
    const err = await RunLock.acquire({
      stateDir,
      serviceKey: SERVICE,
      pid: 22,
      command: 'c',
      isAlive: () => false,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UsageError);
    expect((err as Error).message).toContain(`${path}.takeover`);
    expect((err as Error).message).toContain('pid 21');
  });

  it('re-checks the lock under the takeover file: a takeover finished meanwhile is kept', async () => {
    const stateDir = await tempStateDir();
    const path = await plantLock(stateDir, { pid: 30, token: 'stale' });
    let raced = false;
    const err = await RunLock.acquire({
      stateDir,
      serviceKey: SERVICE,
      pid: 31,
      command: 'slow',
      isAlive: (pid) => {
        if (pid === 30 && !raced) {
          // Between our read of the stale lock and our takeover, another process completes its own.
          raced = true;
          writeFileSync(
            path,
            JSON.stringify({ ...JSON.parse(readFileSync(path, 'utf8')), pid: 32, token: 'fast' }),
          );
        }
        return pid !== 30;
      },
    }).catch((e: unknown) => e);
    expect(raced).toBe(true);
    expect(err).toBeInstanceOf(BusyError);
    expect((err as Error).message).toContain('pid 32');
    expect((await readLockFile(stateDir)).token).toBe('fast');
  });

  it('lets exactly one of several concurrent takeovers of a stale lock win, every time', async () => {
    const stateDir = await tempStateDir();
    const stalePid = 100;
    const rounds = 80;
    for (let round = 0; round < rounds; round++) {
      await plantLock(stateDir, { pid: stalePid, token: `stale-${round}` });
      const contenders = round % 2 === 0 ? [201, 202] : [301, 302, 303, 304];
      const results = await Promise.allSettled(
        contenders.map((pid) =>
          RunLock.acquire({
            stateDir,
            serviceKey: SERVICE,
            pid,
            command: `contender ${pid}`,
            isAlive: (p) => p !== stalePid,
          }),
        ),
      );
      const winners = results.filter((r) => r.status === 'fulfilled');
      const losers = results.filter((r) => r.status === 'rejected');
      expect(winners, `round ${round}`).toHaveLength(1);
      const winner = (winners[0] as PromiseFulfilledResult<RunLock>).value;
      expect((await readLockFile(stateDir)).token).toBe(winner.info.token);
      for (const l of losers) {
        expect(l.reason).toBeInstanceOf(BusyError);
        expect(String((l.reason as Error).message)).toContain(`pid ${winner.info.pid}`);
      }
      await winner.release();
      expect(await readdir(join(lockPath(stateDir), '..'))).toEqual([]);
    }
  });
});
