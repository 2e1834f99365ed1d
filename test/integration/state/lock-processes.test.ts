import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendLockPath } from '../../../src/state/index.js';
import { SERVICE, tempStateDir } from '../../unit/state/helpers.js';

const LOCK_SOURCE = fileURLToPath(new URL('../../../src/state/send-lock.ts', import.meta.url));

/**
 * A contender, kept for every round so each round costs no process start: says "ready"; on
 * "go" (sent to all at once) takes the lock with its real pid and reports; on "release" gives
 * back the lock it won. It exits when its stdin closes.
 */
const CONTENDER = `
import { createInterface } from 'node:readline';
import { acquireSendLock } from './lock.mjs';
const [stateDir, serviceKey] = process.argv.slice(2);
let lock;
const lines = createInterface({ input: process.stdin });
lines.on('line', async (command) => {
  if (command === 'go') {
    try {
      lock = await acquireSendLock({ stateDir, serviceKey, pid: process.pid, command: 'contender' });
      process.stdout.write('won\\n');
    } catch (err) {
      process.stdout.write('lost ' + err.name + ' ' + err.message + '\\n');
    }
  } else if (command === 'release') {
    await lock.release();
    lock = undefined;
    process.stdout.write('released\\n');
  }
});
lines.on('close', () => process.exit(0));
process.stdout.write('ready\\n');
`;

let script = '';
let bundleDir = '';

afterAll(async () => {
  if (bundleDir) await rm(bundleDir, { recursive: true, force: true });
});

beforeAll(async () => {
  // Real processes race on real files: bundle the lock module to plain JavaScript for them.
  bundleDir = await mkdtemp(join(tmpdir(), 'payouts-lock-bundle-'));
  const dir = bundleDir;
  await build({
    entryPoints: [LOCK_SOURCE],
    outfile: join(dir, 'lock.mjs'),
    bundle: true,
    format: 'esm',
    platform: 'node',
    logLevel: 'silent',
  });
  script = join(dir, 'contender.mjs');
  await writeFile(script, CONTENDER);
}, 30_000);

/** A running contender and its output lines. */
interface Contender {
  child: ChildProcess;
  line: () => Promise<string>;
}

/** Starts a contender process. */
function contender(stateDir: string): Contender {
  const child = spawn(process.execPath, [script, stateDir, SERVICE], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines: string[] = [];
  const waiting: Array<(l: string) => void> = [];
  let buf = '';
  const push = (l: string) => {
    const w = waiting.shift();
    if (w) w(l);
    else lines.push(l);
  };
  child.stdout?.on('data', (d: Buffer) => {
    buf += d.toString();
    for (let i = buf.indexOf('\n'); i !== -1; i = buf.indexOf('\n')) {
      push(buf.slice(0, i));
      buf = buf.slice(i + 1);
    }
  });
  child.on('exit', () => push('exited'));
  return {
    child,
    line: () => {
      const l = lines.shift();
      return l !== undefined ? Promise.resolve(l) : new Promise((r) => waiting.push(r));
    },
  };
}

describe('the send lock across processes', () => {
  it('lets exactly one of three processes take over a stale lock, round after round', async () => {
    const stateDir = await tempStateDir();
    const lockPath = sendLockPath(stateDir, SERVICE);
    await mkdir(dirname(lockPath), { recursive: true });
    const stalePid = spawnSync(process.execPath, ['-e', '0']).pid!;
    const runs = [0, 1, 2].map(() => contender(stateDir));
    try {
      expect(await Promise.all(runs.map((r) => r.line()))).toEqual(['ready', 'ready', 'ready']);
      for (let round = 0; round < 15; round++) {
        await writeFile(
          lockPath,
          JSON.stringify({
            pid: stalePid,
            hostname: hostname(),
            started_at: 'then',
            command: 'crashed',
            token: `stale-${round}`,
          }),
        );
        for (const r of runs) r.child.stdin?.write('go\n');
        const results = await Promise.all(runs.map((r) => r.line()));
        const winners = runs.filter((_, i) => results[i] === 'won');
        expect(winners, `round ${round}: ${results.join(' | ')}`).toHaveLength(1);
        const winnerPid = winners[0]!.child.pid!;
        for (const r of results.filter((x) => x !== 'won')) {
          expect(r).toMatch(new RegExp(`^lost BusyError .*\\(pid ${winnerPid}, `));
        }
        expect(JSON.parse(await readFile(lockPath, 'utf8'))).toMatchObject({ pid: winnerPid });
        // The winner releases: no lock is left behind.
        winners[0]!.child.stdin?.write('release\n');
        expect(await winners[0]!.line()).toBe('released');
        await expect(readFile(lockPath)).rejects.toMatchObject({ code: 'ENOENT' });
      }
    } finally {
      await Promise.all(
        runs.map(
          (r) =>
            new Promise<void>((resolve) => {
              if (r.child.exitCode !== null) resolve();
              else r.child.on('exit', () => resolve());
              r.child.stdin?.end();
            }),
        ),
      );
    }
  }, 60_000);
});
