import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type LedgerService, ledgerPerTest } from '../helpers/ledger-service.js';
import { FakeClock, runMain } from '../helpers/main.js';
import { writeRun } from '../helpers/sandbox.js';
import { onTerminal } from '../helpers/terminal.js';

// Issue 18, as a finance person meets it at a terminal: confirm, Ctrl-C halfway, run again,
// run a third time. The built binary runs on a pseudo-terminal driven by a small Python script;
// the Ctrl-C is the process under test, and the two runs after it read what it left, in this
// process as at a terminal of 100 columns, on a fake clock that goes on from now.

let svc: LedgerService | undefined;
const fixture = ledgerPerTest();

describe('at a terminal: confirm, Ctrl-C, run again, run a third time', () => {
  it('tells the truth about the money at every step, and pays each payout once', async () => {
    const home = fixture.home();
    const marker = join(home.dir, 'third-request');
    // The third request marks its arrival and is answered a moment later: Ctrl-C comes
    // while it is in flight, so six payouts are sent and fourteen are not.
    svc = await fixture.start((n) => {
      if (n === 3) writeFileSync(marker, '');
      return n === 3 ? { delayMs: 500 } : {};
    });
    const { file, refs } = writeRun(home.dir, 20);
    const env = { ...svc.env(home.env), NO_COLOR: '1' };
    const args = ['send', file, '--chunk-size', '2', '--concurrency', '1'];

    const first = await onTerminal(
      args,
      [{ expect: '[y/N]' }, { send: 'y\r' }, { wait_file: marker }, { send: '\u0003' }],
      env,
    );
    expect(first.steps).toBe(4);
    expect(first.output).toContain('Send 20 payouts (EUR 215.00)? They cannot be taken back.');
    expect(first.output).toContain(
      'Interrupted: 6 of 20 payouts sent (6 succeeded); 14 not sent, EUR 192.50. Run the same command again to send them; nothing will be sent twice.',
    );
    expect(first.output).toMatch(/20 payouts: 6 succeeded, 0 failed, 0 pending, 14 not sent/);
    // Nothing failed: a payout that was not sent is never called failed.
    expect(first.output).not.toMatch(/[1-9]\d* failed|\bfailed\b(?!,)/);
    expect(first.code).toBe(130);

    /** A later run at a terminal, `typed` its keys: its code and all it printed. */
    const atTerminal = async (typed = '') => {
      const r = await runMain(args, {
        env,
        terminal: { columns: 100 },
        stdin: typed,
        clock: new FakeClock(Date.now()),
      });
      return { code: r.code, output: r.stdout + r.stderr };
    };
    const second = await atTerminal('y\n');
    expect(second.output).toMatch(/Sent earlier: +EUR +22\.50 +\(6 payouts; not sent again\)/);
    expect(second.output).toMatch(/To send now: +EUR +192\.50 +\(14 payouts\)/);
    expect(second.output).toContain(
      'Send 14 payouts (EUR 192.50)? They cannot be taken back. [y/N]',
    );
    expect(second.output).toMatch(/20 payouts: 20 succeeded, 0 failed, 0 pending \(6 sent earlier/);
    expect(second.code).toBe(0);

    const third = await atTerminal();
    expect(third.output).toMatch(/Nothing to send: all 20 payouts were sent earlier/);
    expect(third.output).not.toContain('[y/N]');
    expect(third.code).toBe(0);

    expect([...svc.held.keys()].sort()).toEqual([...refs].sort());
    expect(svc.appliedTwice()).toEqual([]);
  });
});
