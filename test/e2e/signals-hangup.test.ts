import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, parseJsonStdout, runCli } from '../helpers/cli.js';
import { ledgerPerTest } from '../helpers/ledger-service.js';
import {
  documentOnScreen,
  finishesOnceOnRerun,
  reportStatuses,
  type SendDoc,
  STOPPING,
  sendArgs,
  setup,
  statusCounts,
} from '../helpers/signal-runs.js';
import { onTerminal } from '../helpers/terminal.js';

// Issue 26, continued from signals.test.ts: a closed terminal, SIGTERM and SIGHUP under --json,
// and a terminal without a size, with the built binary run as a person does (a stored profile,
// the spinner on), on a pseudo-terminal or with its streams piped to a script.

const fixture = ledgerPerTest();

describe('a terminal that reports 0 columns', () => {
  it('sends every payout, with no runaway spinner output', async () => {
    // Nothing stops this run: its third request need not wait.
    const s = await setup(fixture, 0);
    const run = await onTerminal(sendArgs(s, '--yes'), [], s.home.env, 0);
    expect(run.output).toMatch(/20 payouts: 20 succeeded, 0 failed/);
    expect(run.code).toBe(0);
    expect(run.output.length).toBeLessThan(20_000);
    expect(s.svc.appliedTwice()).toEqual([]);
  });
});

describe('closing the terminal (SIGHUP)', () => {
  it('stops the run like Ctrl-C: every row has an outcome, none is left in doubt', async () => {
    const s = await setup(fixture);
    const report = join(s.home.dir, 'report.csv');
    const closed = await onTerminal(
      sendArgs(s, '--yes', '--report', report),
      [{ wait_file: s.marker }, { hangup: true }],
      s.home.env,
    );
    expect(closed.code).toBe(130);
    const statuses = reportStatuses(report);
    expect(statuses.size).toBe(20);
    expect([...statuses.values()].filter((v) => v === 'success')).toHaveLength(6);
    expect([...statuses.values()].filter((v) => v === 'not_sent')).toHaveLength(14);
    await finishesOnceOnRerun(s);
  });
});

describe('a --json run stopped by a signal', () => {
  it.each(['SIGTERM', 'SIGHUP'] as const)(
    '%s: stdout is still one complete document listing every row',
    async (signal) => {
      const s = await setup(fixture, 'held');
      // Signalled once the third request has arrived: two were answered, one is in flight,
      // answered once the run has said it stops. Without a terminal, as a job runner starts
      // it: a SIGHUP is then someone's stop.
      const r = await runCli(sendArgs(s, '--yes', '--json'), {
        env: s.home.env,
        detached: true,
        whileRunning: (child) => {
          let said = '';
          child.stderr.on('data', (d: string) => {
            said += d;
            if (said.includes(STOPPING)) s.release();
          });
          const poll = setInterval(() => {
            if (!existsSync(s.marker)) return;
            clearInterval(poll);
            child.kill(signal);
          }, 20);
          return () => clearInterval(poll);
        },
      });
      expect(r.code).toBe(130);
      // Not on a terminal: no key to press, and the result line is no warning for log scanners.
      expect(r.stderr).not.toContain('Ctrl-C');
      expect(r.stderr).toMatch(/^Interrupted: 6 of 20 payouts sent/m);
      expect(r.stderr).not.toContain('warning: Interrupted');
      const doc = parseJsonStdout<{ results: Array<{ status: string }> }>(r);
      expect(doc.results).toHaveLength(20);
      expect(doc.results.filter((r) => r.status === 'success')).toHaveLength(6);
      expect(s.svc.held.size).toBe(6);
      expect(s.svc.appliedTwice()).toEqual([]);
    },
  );
});

describe('SIGTERM twice within milliseconds, as timeout(1) sends it', () => {
  it('is one stop: the request in flight finishes, one whole document, exit 130', async () => {
    const s = await setup(fixture, 'held');
    const report = join(s.home.dir, 'report.csv');
    const args = sendArgs(s, '--yes', '--json', '--report', report);
    const stopped = await onTerminal(
      args,
      [
        { wait_file: s.marker },
        { signal: 'TERM' },
        { sleep: 0.005 },
        { signal: 'TERM' },
        { expect: STOPPING },
        { touch: s.releaseFile },
      ],
      s.home.env,
    );
    expect(stopped.code).toBe(130);
    const doc = documentOnScreen(args, stopped);
    expect(doc.interrupted).toBe(true);
    expect(statusCounts(doc.results)).toEqual({ success: 6, not_sent: 14 });
    expect(reportStatuses(report).size).toBe(20);
    expect(s.svc.held.size).toBe(6);
    await finishesOnceOnRerun(s);
  });
});

/** Runs under nohup on a terminal, `input` its standard input, and closes the terminal mid-run. */
async function nohupThenHangUp(input: string) {
  const s = await setup(fixture);
  const report = join(s.home.dir, 'report.csv');
  // nohup writes the run's terminal output to nohup.out in the folder it starts in.
  const wrapper = ['sh', '-c', `cd "$0" && exec nohup "$@"${input}`, s.home.dir];
  const args = sendArgs(s, '--yes', '--json', '--report', report);
  const closed = await onTerminal(args, [{ wait_file: s.marker }, { hangup: true }], s.home.env, {
    wrapper,
  });
  expect(closed.output).toMatch(/nohup: (ignoring input and )?appending output to 'nohup.out'/);
  const output = readFileSync(join(s.home.dir, 'nohup.out'), 'utf8');
  const doc = documentOnScreen(args, { ...closed, output });
  const statuses = [...reportStatuses(report).values()];
  return {
    code: closed.code,
    exitCode: doc.exit_code,
    results: doc.results.length,
    reported: statuses.filter((v) => v === 'success').length,
    applied: s.svc.held.size,
    appliedTwice: s.svc.appliedTwice(),
  };
}

describe('a run started under nohup', () => {
  it('goes on when its terminal closes, whatever its standard input, and sends every payout once', async () => {
    // With standard input a terminal nohup marks it (reopened write-only); with it not a
    // terminal there is no mark, only every stream moved off the terminal. Both at once.
    const runs = await Promise.all([nohupThenHangUp(''), nohupThenHangUp(' < /dev/null')]);
    const once = { code: 0, exitCode: 0, results: 20, reported: 20, applied: 20, appliedTwice: [] };
    expect(runs).toEqual([once, once]);
  });
});

/** Whether a process catches SIGHUP (/proc/PID/status): Node itself does not, bin/payouts.js does. */
function catchesHangUps(pid: number): boolean {
  try {
    const caught = /^SigCgt:\s*([0-9a-f]+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return caught !== null && (BigInt(`0x${caught[1]}`) & 1n) === 1n;
  } catch {
    return false;
  }
}

describe('a stop while the program is still loading', () => {
  it('under --json still leaves one document, exit 130, nothing sent', async () => {
    // bin/payouts.js listens before it loads the bundle (which takes most of the start-up).
    const bin = readFileSync(BIN, 'utf8');
    expect(bin.indexOf('process.on(signal')).toBeGreaterThan(-1);
    expect(bin.indexOf('process.on(signal')).toBeLessThan(bin.indexOf('await import('));
    const s = await setup(fixture);
    const args = sendArgs(s, '--yes', '--json');
    // SIGTERM as soon as the first line of bin/payouts.js has run, well before src/cli.ts.
    const r = await runCli(args, {
      env: s.home.env,
      detached: true,
      whileRunning: (child) => {
        let stopped = false;
        const poll = () => {
          if (stopped) return;
          if (child.pid !== undefined && catchesHangUps(child.pid)) child.kill('SIGTERM');
          else setImmediate(poll);
        };
        poll();
        return () => {
          stopped = true;
        };
      },
    });
    expect(r.code).toBe(130);
    const doc = parseJsonStdout<SendDoc>(r);
    expect(doc.exit_code).toBe(130);
    expect(doc.interrupted).toBe(true);
    expect(statusCounts(doc.results)).toEqual({ not_sent: 20 });
    expect(s.svc.creates).toBe(0);
  });
});
