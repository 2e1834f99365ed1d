import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { tempHome } from '../../helpers/cli.js';
import { runMain } from '../../helpers/main.js';
import { privateTmp } from '../../../src/state/tmp.js';

// Issue 41: no file of payouts (an approved run's, standard input's) outlives its run, even
// one killed by SIGKILL before it could remove them: the next run that writes one does.

const homes: Array<{ cleanup(): void }> = [];
afterEach(() => {
  for (const h of homes.splice(0)) h.cleanup();
});

/** The id of a process that has ended. */
function endedPid(): number {
  const pid = spawnSync('sh', ['-c', 'echo $$'], { encoding: 'utf8' }).stdout.trim();
  return Number(pid);
}

it("removes the files of runs no longer running, and keeps a running one's and others", () => {
  const home = tempHome();
  homes.push(home);
  const dir = join(home.dir, 'state', 'tmp');
  const dead = endedPid();
  const files = {
    approvedDead: `approved-p0123456789abcde-${dead}.csv`,
    stdinDead: `stdin-${dead}-1764300000000.spool`,
    approvedLive: `approved-p0123456789abcde-${process.pid}.csv`,
    other: 'notes.txt',
  };
  privateTmp(dir);
  for (const name of Object.values(files)) writeFileSync(join(dir, name), 'x');
  expect(privateTmp(dir)).toBe(dir);
  expect(readdirSync(dir).sort()).toEqual([files.approvedLive, files.other].sort());
});

it('a run reading standard input removes what a killed run left, and its own spool', async () => {
  const home = tempHome();
  homes.push(home);
  const dir = join(home.dir, 'state', 'payouts', 'tmp');
  privateTmp(dir);
  const left = join(dir, `approved-p0123456789abcde-${endedPid()}.csv`);
  writeFileSync(left, 'reference_id,amount,currency,recipient\n');
  const csv = 'reference_id,amount,currency,recipient\nT-1,1.00,EUR,t@example.com\n';
  const r = await runMain(['send', '-', '--format', 'csv', '--dry-run'], {
    env: home.env,
    stdin: csv,
  });
  expect(r.code, r.stderr).toBe(0);
  expect(existsSync(left)).toBe(false);
  expect(readdirSync(dir)).toEqual([]);
});
