import { describe, expect, it } from 'vitest';
import { ledgerPerTest } from '../helpers/ledger-service.js';
import { writeRun } from '../helpers/sandbox.js';
import { onTerminal, storeProfile } from '../helpers/terminal.js';

// Issue 33, item 3: a wait is a live line on a terminal, with what it waits for and a
// countdown, and the run says once why waiting protects the money.

const fixture = ledgerPerTest();

/** A 500 as the interface's envelope carries it: no results, so nothing is proven. */
const INTERNAL_ERROR = { success: false, message: ['Internal Server Error'], data: [] };

describe('at a terminal: a read-back waits with a countdown', () => {
  it('a 500 on the first request: the spinner line counts down the quiet time and says why', async () => {
    const home = fixture.home();
    // The first request is answered 500 and applied a moment later, as a request still in
    // progress: its two payouts are not found at once, and found after the quiet time (2.5 s
    // with PAYOUTS_TIMEOUT=1.5), so the countdown shows 2 s and 1 s whatever the first read took.
    const svc = await fixture.start((n) =>
      n === 1 ? { status: 500, body: INTERNAL_ERROR, applyLaterMs: 1_500 } : {},
    );
    await storeProfile(home.env, svc.url);
    const { file, refs } = writeRun(home.dir, 4);
    const screen = await onTerminal(
      ['send', file, '--yes', '--chunk-size', '2', '--concurrency', '1'],
      [],
      { ...home.env, PAYOUTS_TIMEOUT: '1.5' },
    );
    expect(screen.code, screen.output).toBe(0);
    // The countdown moves: the line shows 2 s, then 1 s, beside the payouts in doubt.
    expect(screen.output).toMatch(/Sending.* · reading 2 payouts back in 2 s/);
    expect(screen.output).toMatch(
      /Sending: 2\/4 payouts done, .*2 in doubt waiting to be read back · reading 2 payouts back in 1 s/,
    );
    // Why it waits, in plain words, once (test/unit/send/wait-why.test.ts: once a run).
    const why = screen.output.match(/The wait is what keeps a payout from being paid twice/g);
    expect(why).toHaveLength(1);
    expect([...svc.held.keys()].sort()).toEqual([...refs].sort());
    expect(svc.appliedTwice()).toEqual([]);
  });
});
