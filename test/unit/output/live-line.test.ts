import { describe, expect, it } from 'vitest';
import { LiveLine } from '../../../src/output/live-line.js';

describe('LiveLine: the soonest wait with its countdown', () => {
  it('counts down, shows the soonest of several, and drops a wait once ended', () => {
    let t = 0;
    const shown: string[] = [];
    const line = new LiveLine(
      'Sending…',
      (s) => shown.push(s),
      () => t,
    );
    const endLong = line.wait('reading 10 payouts back in', 50_000);
    expect(shown.at(-1)).toBe('Sending… · reading 10 payouts back in 50 s');
    const endShort = line.wait('sending 10 payouts again in', 3_000);
    expect(shown.at(-1)).toBe('Sending… · sending 10 payouts again in 3 s (and 1 more wait)');
    t = 1_500;
    line.update('Sending: 30/60 payouts done');
    expect(shown.at(-1)).toBe(
      'Sending: 30/60 payouts done · sending 10 payouts again in 2 s (and 1 more wait)',
    );
    endShort();
    expect(shown.at(-1)).toBe('Sending: 30/60 payouts done · reading 10 payouts back in 49 s');
    endLong();
    endLong(); // twice is once
    expect(shown.at(-1)).toBe('Sending: 30/60 payouts done');
    line.stop();
  });
});
