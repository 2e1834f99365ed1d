import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect, it } from 'vitest';
import { BIN } from '../helpers/cli.js';
import { ledgerPerTest } from '../helpers/ledger-service.js';
import { writeRun } from '../helpers/sandbox.js';
import { python3, storeProfile } from '../helpers/terminal.js';

// Issue 41: runs people start in the background on purpose go on to the end when what
// started them leaves. Each setup's launcher exits once the run's first request has arrived;
// the service then holds the second request until a second after that, long past the
// parent check's interval, so a run that took the launcher's going for a stop would stop
// there. The setups run at once, each against its own service and state folder, in a new
// session (no terminal, as a job runner starts them); the killed `npx` is
// signals-parent.test.ts.

const fixture = ledgerPerTest();

/** What one setup ended with: payouts' own exit code (its document's) and the ledger's counts. */
interface Outcome {
  setup: string;
  exitCode: number | undefined;
  applied: number;
  appliedTwice: string[];
}

/** The shell line that runs payouts in `dir`, its document to out.json. */
function payoutsLine(dir: string): string {
  const args = ['send', join(dir, 'run.csv'), '--yes', '--json', '--chunk-size', '2'];
  const words = [process.execPath, BIN, ...args, '--concurrency', '1'];
  return `${words.map((w) => `'${w}'`).join(' ')} > out.json 2> err.log`;
}

const WAIT_SH = 'while [ ! -e began ]; do sleep 0.02; done';
const WAIT_PY = 'while not os.path.exists("began"): time.sleep(0.02)';

/** Each setup: the launcher's command line, given payouts' shell line. */
const SETUPS: Record<string, (line: string) => string[]> = {
  'nohup … & in a script that exits': (line) => ['sh', '-c', `nohup ${line} & ${WAIT_SH}`],
  '… & disown in a script that exits': (line) => ['bash', '-c', `${line} & disown; ${WAIT_SH}`],
  'setsid … & in a script that exits': (line) => ['sh', '-c', `setsid ${line} & ${WAIT_SH}`],
  'a double fork whose middle process leaves late': (line) => [
    'sh',
    '-c',
    `( ${line} & ${WAIT_SH} )`,
  ],
  'a launcher that exits without waiting (Popen)': (line) => [
    python3(),
    '-c',
    `import os, subprocess, time\nsubprocess.Popen(["sh", "-c", "exec " + ${JSON.stringify(line)}])\n${WAIT_PY}`,
  ],
  "bash -c 'payouts …; echo done' whose parent exits": (line) => [
    python3(),
    '-c',
    `import os, subprocess, time\nsubprocess.Popen(["bash", "-c", ${JSON.stringify(`${line}; echo "done $?" > done`)}])\n${WAIT_PY}`,
  ],
};

/** The processes still running payouts for the file in `dir`. */
function runsOf(dir: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (cmd.includes(BIN) && cmd.includes(join(dir, 'run.csv'))) pids.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

/** Waits until no process runs payouts on `dir`'s file (killing them after 40 s). */
async function runEnded(dir: string): Promise<void> {
  for (let waited = 0; runsOf(dir).length; waited += 50) {
    if (waited > 40_000) {
      for (const pid of runsOf(dir)) process.kill(pid, 'SIGKILL');
      throw new Error(`the run in ${dir} did not end:\n${readFileSync(join(dir, 'err.log'))}`);
    }
    await sleep(50);
  }
}

async function runSetup(setup: string, launcher: (line: string) => string[]): Promise<Outcome> {
  const home = fixture.home();
  let launcherGone: () => void = () => {};
  const gone = new Promise<void>((resolve) => {
    launcherGone = resolve;
  });
  const svc = await fixture.start((n) => {
    if (n === 1) writeFileSync(join(home.dir, 'began'), '');
    return n === 2 ? { hold: gone.then(() => sleep(1000)) } : {};
  });
  await storeProfile(home.env, svc.url);
  writeRun(home.dir, 6);
  const [command, ...args] = launcher(payoutsLine(home.dir));
  const child = spawn(command!, args, {
    cwd: home.dir,
    env: { PATH: process.env.PATH ?? '', LANG: 'C.UTF-8', ...home.env },
    stdio: 'ignore',
    detached: true,
  });
  await new Promise<void>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', () => resolve());
  });
  launcherGone();
  await runEnded(home.dir);
  const out = join(home.dir, 'out.json');
  const doc = existsSync(out)
    ? (JSON.parse(readFileSync(out, 'utf8')) as { exit_code: number })
    : undefined;
  const done = join(home.dir, 'done');
  if (existsSync(done)) expect(readFileSync(done, 'utf8').trim()).toBe(`done ${doc?.exit_code}`);
  return {
    setup,
    exitCode: doc?.exit_code,
    applied: svc.held.size,
    appliedTwice: svc.appliedTwice(),
  };
}

it('runs started in the background go on when their launcher leaves: each payout applied once', async () => {
  const outcomes = await Promise.all(
    Object.entries(SETUPS).map(([setup, launcher]) => runSetup(setup, launcher)),
  );
  expect(outcomes).toEqual(
    Object.keys(SETUPS).map((setup) => ({ setup, exitCode: 0, applied: 6, appliedTwice: [] })),
  );
});
