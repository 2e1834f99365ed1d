import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseJsonStdout, runCli } from '../helpers/cli.js';
import { type LedgerService, ledgerPerTest } from '../helpers/ledger-service.js';
import { writeRun } from '../helpers/sandbox.js';
import { onTerminal, type Step, storeProfile } from '../helpers/terminal.js';

// Issue 26: the operator can stop a run in every setup. These run the built binary as a
// person does: a profile stored by `config set-credentials`, no CI and no NO_COLOR (so the
// spinner is on), on a pseudo-terminal or with its streams piped to a script.

const fixture = ledgerPerTest();

interface Setup {
  svc: LedgerService;
  home: { dir: string; env: Record<string, string> };
  file: string;
  refs: string[];
  marker: string;
}

/** A ledger service whose third request marks its arrival and is answered `delayMs` later. */
async function setup(delayMs = 400): Promise<Setup> {
  const home = fixture.home();
  const marker = join(home.dir, 'third-request');
  const svc = await fixture.start((n) => {
    if (n === 3) writeFileSync(marker, '');
    return n === 3 ? { delayMs } : {};
  });
  await storeProfile(home.env, svc.url);
  const { file, refs } = writeRun(home.dir, 20);
  return { svc, home, file, refs, marker };
}

const sendArgs = (s: Setup, ...more: string[]) => [
  'send',
  s.file,
  '--chunk-size',
  '2',
  '--concurrency',
  '1',
  ...more,
];

/** Every row of a --report, by reference: its status column. */
function reportStatuses(path: string): Map<string, string> {
  const [header, ...lines] = readFileSync(path, 'utf8')
    .replace(/^\uFEFF/, '')
    .trim()
    .split(/\r?\n/);
  const cols = header!.split(',');
  const ref = cols.indexOf('reference_id');
  const status = cols.indexOf('status');
  return new Map(lines.map((l) => [l.split(',')[ref]!, l.split(',')[status]!]));
}

/** After a stop: nothing applied twice, and a second run sends the rest and exits 0. */
async function finishesOnceOnRerun(s: Setup, env: Record<string, string> = {}): Promise<void> {
  const again = await onTerminal(sendArgs(s, '--yes'), [], { ...s.home.env, ...env });
  expect(again.output).toMatch(/20 payouts: 20 succeeded, 0 failed/);
  expect(again.code).toBe(0);
  expect([...s.svc.held.keys()].sort()).toEqual([...s.refs].sort());
  expect(s.svc.appliedTwice()).toEqual([]);
}

describe('Ctrl-C on a terminal, spinner on, credentials from a stored profile', () => {
  it.each([
    ['after the confirmation', [{ expect: '[y/N]' }, { send: 'y\r' }] as Step[], []],
    ['with --yes', [] as Step[], ['--yes']],
  ])(
    '%s: the run stops after the request in flight and reports every row',
    async (_, before, flags) => {
      const s = await setup();
      const stopped = await onTerminal(
        sendArgs(s, ...flags),
        [...before, { wait_file: s.marker }, { send: '\u0003' }],
        s.home.env,
      );
      expect(stopped.steps).toBe(before.length + 2);
      expect(stopped.output).toMatch(/20 payouts: 6 succeeded, 0 failed, 0 pending, 14 not sent/);
      expect(stopped.output).toContain('Interrupted: 6 of 20 payouts sent');
      expect(stopped.code).toBe(130);
      expect(s.svc.held.size).toBe(6);
      await finishesOnceOnRerun(s);
    },
  );
});

describe('a second Ctrl-C', () => {
  it('exits at once; the next run reads back what was in flight and sends it once', async () => {
    // The third request is applied at once but answered only after 20 s: it is in flight.
    const s = await setup(20_000);
    const { svc, home, marker } = s;
    const stopped = await onTerminal(
      sendArgs(s, '--yes'),
      [{ wait_file: marker }, { send: '\u0003' }, { expect: 'Ctrl-C again' }, { send: '\u0003' }],
      home.env,
    );
    expect(stopped.steps).toBe(4);
    expect(stopped.output).toContain('waiting for the 1 request in flight to finish');
    expect(stopped.output).not.toContain('20 payouts:');
    expect(stopped.code).toBe(130);
    expect(svc.held.size).toBe(6);
    // The intents of the two chunks waiting behind it were written too: the next run finds
    // them not at the service and sends them only after the quiet time (short here).
    await finishesOnceOnRerun(s, { PAYOUTS_TIMEOUT: '1' });
  });
});

describe('a terminal that reports 0 columns', () => {
  it('sends every payout, with no runaway spinner output', async () => {
    const s = await setup();
    const run = await onTerminal(sendArgs(s, '--yes'), [], s.home.env, 0);
    expect(run.output).toMatch(/20 payouts: 20 succeeded, 0 failed/);
    expect(run.code).toBe(0);
    expect(run.output.length).toBeLessThan(20_000);
    expect(s.svc.appliedTwice()).toEqual([]);
  });
});

describe('closing the terminal (SIGHUP)', () => {
  it('stops the run like Ctrl-C: every row has an outcome, none is left in doubt', async () => {
    const s = await setup();
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
      const s = await setup();
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
      const doc = parseJsonStdout<{ results: Array<{ status: string }> }>(r);
      expect(doc.results).toHaveLength(20);
      expect(doc.results.filter((r) => r.status === 'success')).toHaveLength(6);
      expect(s.svc.held.size).toBe(6);
      expect(s.svc.appliedTwice()).toEqual([]);
    },
  );
});
