import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseJsonStdout, runCli } from '../helpers/cli.js';
import { ledgerPerTest } from '../helpers/ledger-service.js';
import {
  documentOnScreen,
  finishesOnceOnRerun,
  reportStatuses,
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
    const s = await setup(fixture);
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
      const s = await setup(fixture);
      // Signalled once the third request has arrived: two were answered, one is in flight.
      const r = await runCli(sendArgs(s, '--yes', '--json'), {
        env: s.home.env,
        whileRunning: (child) => {
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
    const s = await setup(fixture);
    const report = join(s.home.dir, 'report.csv');
    const args = sendArgs(s, '--yes', '--json', '--report', report);
    const stopped = await onTerminal(
      args,
      [{ wait_file: s.marker }, { signal: 'TERM' }, { sleep: 0.005 }, { signal: 'TERM' }],
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

describe('a run started under nohup', () => {
  it('goes on when its terminal closes, and sends every payout once', async () => {
    const s = await setup(fixture);
    const report = join(s.home.dir, 'report.csv');
    // nohup writes the run's terminal output to nohup.out in the folder it starts in.
    const wrapper = ['sh', '-c', 'cd "$0" && exec nohup "$@"', s.home.dir];
    const closed = await onTerminal(
      sendArgs(s, '--yes', '--json', '--report', report),
      [{ wait_file: s.marker }, { hangup: true }],
      s.home.env,
      { wrapper },
    );
    expect(closed.output).toContain("nohup: ignoring input and appending output to 'nohup.out'");
    expect(closed.code).toBe(0);
    const args = sendArgs(s, '--yes', '--json', '--report', report);
    const output = readFileSync(join(s.home.dir, 'nohup.out'), 'utf8');
    const doc = documentOnScreen(args, { ...closed, output });
    expect(doc.exit_code).toBe(0);
    expect(doc.results).toHaveLength(20);
    expect([...reportStatuses(report).values()].every((v) => v === 'success')).toBe(true);
    expect(s.svc.held.size).toBe(20);
    expect(s.svc.appliedTwice()).toEqual([]);
  });
});
