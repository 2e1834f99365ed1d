import { describe, expect, it } from 'vitest';
import { ledgerPerTest } from '../helpers/ledger-service.js';
import { writeRun } from '../helpers/sandbox.js';
import { onTerminal, storeProfile } from '../helpers/terminal.js';

// Issue 49, item 5: a service that does not answer is a live countdown on the spinner's line
// (not a line that says "5 s so far" for as long as the wait lasts), and its cause is said once.

const fixture = ledgerPerTest();

describe('at a terminal: a service that does not answer', () => {
  it('counts down to the timeout on the live line, then says the cause once', async () => {
    const home = fixture.home();
    // The service applies the request and never answers it; its lookups find the payout.
    const svc = await fixture.start(() => ({ hold: new Promise(() => {}) }));
    await storeProfile(home.env, svc.url);
    const { file, refs } = writeRun(home.dir, 1);
    // PAYOUTS_TIMEOUT=3: a request is slow after 1.5 s and times out at 3 s, so the line
    // shows 2 s and then 1 s left whatever the machine's speed.
    const screen = await onTerminal(['send', file, '--yes'], [], {
      ...home.env,
      PAYOUTS_TIMEOUT: '3',
    });
    expect(screen.code, screen.output).toBe(0);
    const line =
      /Sending payouts….* · waiting for 127\.0\.0\.1:\d+ to answer a create request; it times out in/;
    expect(screen.output).toMatch(new RegExp(`${line.source} 2 s`));
    expect(screen.output).toMatch(new RegExp(`${line.source} 1 s`));
    expect(screen.output).not.toContain('so far');
    // The cause once, when it comes; then the read-back finds the payout applied.
    expect(screen.output.match(/no answer from 127\.0\.0\.1:\d+ within 3 s/g)).toHaveLength(1);
    expect(screen.output).toMatch(/1 payout: 1 succeeded/);
    expect([...svc.held.keys()]).toEqual(refs);
    expect(svc.appliedTwice()).toEqual([]);
  });
});
