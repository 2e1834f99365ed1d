import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { procStat } from '../../src/proc.js';
import { parseJsonStdout } from '../helpers/cli.js';
import { type LedgerService, ledgerPerTest } from '../helpers/ledger-service.js';
import { FakeClock, runMain } from '../helpers/main.js';
import { recycledDatabase } from '../helpers/pg.js';
import { writeRun } from '../helpers/sandbox.js';
import { onTerminal, storeProfile } from '../helpers/terminal.js';

// Issue 48 item 5: a send killed while its parent lives on (`timeout -s KILL`, a container's
// first process that never reaps) is a zombie until reaped. It holds nothing: the next send
// goes on at once, reads back what the killed one had in flight, and pays nothing twice.

const fixture = ledgerPerTest();

/**
 * Runs the command in the background of a shell that then becomes `sleep`, which never reaps
 * it: killed, it stays a zombie while its parent lives. The shell writes "CHILD PARENT" to
 * `pids`; the command keeps the terminal as its standard input (fd 3 carries it past the
 * /dev/null a background command gets).
 */
function unreapedUnder(pids: string): string[] {
  return ['sh', '-c', `exec 3<&0; "$@" <&3 3<&- & echo "$! $$" > ${pids}; exec sleep 120`, 'sh'];
}

/** Waits until the service has received `n` create requests. */
async function untilCreates(svc: LedgerService, n: number): Promise<void> {
  for (let i = 0; i < 1_000 && svc.creates < n; i++) await sleep(20);
  expect(svc.creates).toBeGreaterThanOrEqual(n);
}

/** The pids the wrapper wrote, once it has. */
async function pidsIn(path: string): Promise<{ child: number; parent: number }> {
  for (let i = 0; i < 500; i++) {
    const text = (() => {
      try {
        return readFileSync(path, 'utf8');
      } catch {
        return '';
      }
    })();
    const [child, parent] = text.trim().split(' ').map(Number);
    if (child && parent) return { child, parent };
    await sleep(20);
  }
  throw new Error(`no pids in ${path}`);
}

/** Kills the send and waits until the process table shows it a zombie. */
async function killToZombie(pid: number): Promise<void> {
  process.kill(pid, 'SIGKILL');
  for (let i = 0; i < 500 && procStat(pid)?.state !== 'Z'; i++) await sleep(10);
  expect(procStat(pid)?.state).toBe('Z');
}

interface Doc {
  success_count: number;
  sent_earlier_count: number;
}

describe.runIf(process.platform === 'linux')('a killed send its parent has not reaped', () => {
  it.each([
    ['this folder', async () => ({})],
    ['a shared history', async () => ({ PAYOUTS_STATE_URL: await recycledDatabase() })],
  ])(
    '%s: the next send goes on at once (not exit 8), reads back, and pays nothing twice',
    async (_, history) => {
      const home = fixture.home();
      // The second request is applied and never answered: in flight when the kill comes.
      const svc = await fixture.start((n) => (n === 2 ? { hold: new Promise(() => {}) } : {}));
      await storeProfile(home.env, svc.url);
      const { file, refs } = writeRun(home.dir, 30);
      const env = { ...home.env, ...(await history()), PAYOUTS_TIMEOUT: '1' };
      const pids = join(home.dir, 'pids');
      const args = ['send', file, '--yes', '--chunk-size', '10', '--concurrency', '1'];
      const screen = onTerminal(args, [], env, { wrapper: unreapedUnder(pids) });
      const { child, parent } = await pidsIn(pids);
      try {
        await untilCreates(svc, 2);
        await killToZombie(child);
        const again = await runMain([...args, '--json'], {
          env,
          clock: new FakeClock(Date.now()),
        });
        // Still a zombie: the second send did not wait for its parent to reap it.
        expect(procStat(child)?.state).toBe('Z');
        expect(again.code, again.stderr).toBe(0);
        expect(again.stderr).toMatch(/Reading back \d+ payouts? whose earlier request/);
        expect(parseJsonStdout<Doc>(again).success_count).toBe(30);
        expect([...svc.held.keys()].sort()).toEqual([...refs].sort());
        expect([...svc.held.values()].filter((h) => h.times !== 1)).toEqual([]);
        expect(svc.appliedTwice()).toEqual([]);
      } finally {
        process.kill(parent, 'SIGKILL');
        await screen;
      }
    },
    60_000,
  );
});
