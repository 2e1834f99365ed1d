import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ledgerPerTest } from '../helpers/ledger-service.js';
import {
  documentOnScreen,
  finishesOnceOnRerun,
  reportStatuses,
  STOPPING,
  sendArgs,
  setup,
  statusCounts,
} from '../helpers/signal-runs.js';
import { onTerminal, type Step } from '../helpers/terminal.js';

// Issue 26: the operator can stop a run in every setup. These run the built binary as a
// person does: a profile stored by `config set-credentials`, no CI and no NO_COLOR (so the
// spinner is on), on a pseudo-terminal. Hang-ups, SIGTERM and odd terminals are in
// signals-hangup.test.ts (two files, so two workers share them).

const fixture = ledgerPerTest();

describe('Ctrl-C on a terminal, spinner on, credentials from a stored profile', () => {
  it.each([
    ['after the confirmation', [{ expect: '[y/N]' }, { send: 'y\r' }] as Step[], []],
    ['with --yes', [] as Step[], ['--yes']],
  ])(
    '%s: the run stops after the request in flight and reports every row',
    async (_, before, flags) => {
      // The third request is answered once the run has said it stops: in flight at the stop.
      const s = await setup(fixture, 'held');
      const stopped = await onTerminal(
        sendArgs(s, ...flags),
        [
          ...before,
          { wait_file: s.marker },
          { send: '\u0003' },
          { expect: STOPPING },
          { touch: s.releaseFile },
        ],
        s.home.env,
      );
      expect(stopped.steps).toBe(before.length + 4);
      expect(stopped.output).toMatch(/20 payouts: 6 succeeded, 0 failed, 0 pending, 14 not sent/);
      expect(stopped.output).toContain('Interrupted: 6 of 20 payouts sent');
      expect(stopped.code).toBe(130);
      expect(s.svc.held.size).toBe(6);
      await finishesOnceOnRerun(s);
    },
  );
});

describe('a second Ctrl-C, more than a second after the first', () => {
  it('ends at once with every row reported, those in flight in doubt; the next run sends each once', async () => {
    // The third request is applied at once but answered only after the run has ended: it is
    // in flight at both stops, however long they take.
    const s = await setup(fixture, 'held');
    const { svc, home, marker } = s;
    const report = join(home.dir, 'report.csv');
    const args = sendArgs(s, '--yes', '--json', '--report', report);
    const stopped = await onTerminal(
      args,
      [
        { wait_file: marker },
        { send: '\u0003' },
        { expect: 'Ctrl-C again' },
        { sleep: 1.2 },
        { send: '\u0003' },
      ],
      home.env,
    );
    s.release();
    expect(stopped.steps).toBe(5);
    expect(stopped.code).toBe(130);
    const doc = documentOnScreen(args, stopped);
    // In doubt rather than answered: the run did not wait for the request in flight.
    expect(doc.outcome_unknown).toEqual([s.refs[4], s.refs[5]]);
    expect(statusCounts(doc.results)).toEqual({ success: 4, unknown: 2, not_sent: 14 });
    const statuses = reportStatuses(report);
    expect(statuses.size).toBe(20);
    expect(statusCounts([...statuses.values()].map((status) => ({ status })))).toEqual({
      success: 4,
      unknown: 2,
      not_sent: 14,
    });
    expect(stopped.output).toMatch(
      /Interrupted: 6 of 20 payouts sent \(4 succeeded, 2 unknown\); 2 in doubt.*it reads back the payouts in doubt before sending anything/,
    );
    expect(svc.held.size).toBe(6);
    await finishesOnceOnRerun(s, { PAYOUTS_TIMEOUT: '1' });
  });
});
