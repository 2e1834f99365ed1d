import { describe, expect, it } from 'vitest';
import { ledgerPerTest } from '../helpers/ledger-service.js';
import { finishesOnceOnRerun, sendArgs, setup } from '../helpers/signal-runs.js';
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
      const s = await setup(fixture);
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
    const s = await setup(fixture, 20_000);
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
