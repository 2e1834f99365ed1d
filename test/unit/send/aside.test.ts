import { describe, expect, it } from 'vitest';
import { Pace } from '../../../src/core/pace.js';
import { Aside, SendingLine, sendingLine } from '../../../src/core/send/aside.js';
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
    expect(sendingLine(0, 1, { ...now, inFlight: 0 })).toBe('Sending: 0/1 payout done, waiting');
  });

  it('says "waiting" while the only request waits (a quiet time), then counts it again', () => {
    const lines: string[] = [];
    const progress = { update: (t: string) => lines.push(t), wait: () => () => {}, stop() {} };
    const state = { inFlight: 1, aside: { requests: 0, payouts: 0 }, rate: () => 6 };
    const live = new SendingLine(progress, 60, () => state);
    live.advance(10);
    expect(lines.at(-1)).toBe('Sending: 10/60 payouts done, 1 request in flight, 6 payouts/s');
    const end = live.wait('quiet time', 5000);
    expect(lines.at(-1)).toBe('Sending: 10/60 payouts done, waiting');
    // Stepped aside, it holds no place: still nothing in flight, and its payouts in doubt.
    Object.assign(state, { inFlight: 0, aside: { requests: 1, payouts: 10 } });
    live.advance(10);
    expect(lines.at(-1)).toBe(
      'Sending: 10/60 payouts done, waiting, 10 in doubt waiting to be read back',
    );
    Object.assign(state, { inFlight: 1, aside: { requests: 0, payouts: 0 } });
    end();
    end();
    expect(lines.at(-1)).toBe('Sending: 10/60 payouts done, 1 request in flight, 6 payouts/s');
  });
});
