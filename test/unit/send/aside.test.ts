import { describe, expect, it } from 'vitest';
import { Pace } from '../../../src/core/pace.js';
import { Aside, sendingLine } from '../../../src/core/send/aside.js';
import { SimClock } from '../../helpers/sim-clock.js';

describe('Aside: requests in doubt give their place back, up to a bound', () => {
  it('a request stepping aside frees its place; past the bound one keeps it', async () => {
    const clock = new SimClock();
    const pace = new Pace({ initial: 3, max: 3, clock });
    const aside = new Aside(pace, 2);
    const permits = await Promise.all([pace.acquire(), pace.acquire(), pace.acquire()]);
    expect(pace.inFlight).toBe(3);
    for (const [i, p] of permits.entries()) aside.track(i + 1, p, 10);
    aside.stepAside(1);
    aside.stepAside(1); // twice is once
    aside.stepAside(2);
    aside.stepAside(3); // the bound is 2: this one keeps its place
    expect(pace.inFlight).toBe(1);
    expect(aside.count).toEqual({ requests: 2, payouts: 20 });
    // Settled: no longer aside, and its permit gives nothing back twice.
    aside.untrack(1);
    pace.done(permits[0]!);
    expect(pace.inFlight).toBe(1);
    expect(aside.count).toEqual({ requests: 1, payouts: 10 });
    // Sent again: it takes a place anew.
    await pace.regain(permits[1]!);
    expect(pace.inFlight).toBe(2);
  });

  it('the spinner line names the payouts in doubt only when there are some', () => {
    const now = { inFlight: 1, inDoubt: 0, perSecond: 40 };
    expect(sendingLine(20, 60, now)).toBe(
      'Sending: 20/60 payouts done, 1 request in flight, 40 payouts/s',
    );
    expect(sendingLine(20, 60, { ...now, inFlight: 2, inDoubt: 10 })).toBe(
      'Sending: 20/60 payouts done, 2 requests in flight, 40 payouts/s, 10 in doubt waiting to be read back',
    );
  });
});
