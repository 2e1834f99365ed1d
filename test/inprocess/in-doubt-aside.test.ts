import { describe, expect, it } from 'vitest';
import { sendJson } from '../helpers/http-servers.js';
import { ledgerPerTest } from '../helpers/ledger-service.js';
import { FakeClock, runMain } from '../helpers/main.js';
import { writeRun } from '../helpers/sandbox.js';

// Issue 33, item 2: a request whose outcome is unknown waits out its quiet time aside, and
// the rest of the file goes on; its payouts are still read back before they are sent again.

const fixture = ledgerPerTest();

/** A 500 as the interface's envelope carries it: no results, so nothing is proven. */
const INTERNAL_ERROR = { success: false, message: ['Internal Server Error'], data: [] };

describe('a payout in doubt waits aside', () => {
  it('a 500 on the second request of six: the other four go out while it is read back, then it is sent once', async () => {
    // The second request is answered 500 without being applied: only a read-back can tell.
    const svc = await fixture.start((n) =>
      n === 2 ? { apply: 'none', status: 500, body: INTERNAL_ERROR } : {},
    );
    const home = fixture.home();
    const { file, refs } = writeRun(home.dir, 60);
    const doubted = new Set(refs.slice(10, 20));
    /** Creates the service had received when each read-back of a doubted payout came. */
    const createsAtGet: number[] = [];
    // Its lookups are answered once the rest of the file has arrived (or after 3 s, so that
    // a send that holds everything behind the read-back fails rather than hangs).
    svc.onGet = (ref, res) => {
      if (!doubted.has(ref)) return false;
      createsAtGet.push(svc.creates);
      const started = Date.now();
      const answer = () => {
        if (svc.creates < 6 && Date.now() - started < 3_000) return setTimeout(answer, 5);
        sendJson(res, 404, { success: false, message: ['Payout not found'], data: [] });
      };
      answer();
      return true;
    };
    const clock = new FakeClock();
    const r = await runMain(
      ['send', file, '--yes', '--json', '--chunk-size', '10', '--concurrency', '1'],
      { env: svc.env(home.env), clock },
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/reading 10 payouts back before deciding anything/);
    // The later lookups came after the other four requests, while the doubted ten waited.
    expect(createsAtGet.at(-1)).toBe(6);
    // Then, and only then, the doubted ten were sent again: the seventh request.
    expect(svc.creates).toBe(7);
    const last = JSON.parse(svc.bodies.at(-1)!) as { payouts: Array<{ reference_id: string }> };
    expect(last.payouts.map((p) => p.reference_id)).toEqual([...doubted]);
    // They waited out the quiet time (50 s by default) before being taken as not applied.
    expect(Math.max(...clock.waits)).toBeGreaterThanOrEqual(1_000);
    expect(clock.waits.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(50_000);
    expect(JSON.parse(r.stdout).success_count).toBe(60);
    expect(svc.appliedTwice()).toEqual([]);
  });
});

describe('every wait is one line off a terminal', () => {
  it('a 429 with Retry-After: 3 says, once, what waits and for how long', async () => {
    const svc = await fixture.start((n) =>
      n === 2
        ? {
            apply: 'none',
            status: 429,
            headers: { 'retry-after': '3' },
            body: { success: false, message: ['Too Many Requests'], data: [] },
          }
        : {},
    );
    const home = fixture.home();
    const { file } = writeRun(home.dir, 30);
    const clock = new FakeClock();
    const r = await runMain(['send', file, '--yes', '--chunk-size', '10', '--concurrency', '1'], {
      env: svc.env(home.env),
      clock,
    });
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stderr.split('\n').filter((l) => l.includes('Retry-After'));
    expect(lines).toEqual([
      'the service asked to wait (Retry-After): sending 10 payouts again in 3 s',
    ]);
    expect(clock.waits).toContain(3_000);
    expect(svc.appliedTwice()).toEqual([]);
  });
});

describe('a 503 tells the pace the service is overloaded', () => {
  it('the limit comes down from 8 to 4 at the first 503, and its payouts are read back', async () => {
    const svc = await fixture.start((n) =>
      n === 1
        ? {
            apply: 'none',
            status: 503,
            body: { success: false, message: ['Service Unavailable'], data: [] },
          }
        : {},
    );
    const home = fixture.home();
    const { file } = writeRun(home.dir, 40);
    const r = await runMain(['send', file, '--yes', '--debug', '--chunk-size', '5'], {
      env: svc.env(home.env),
      clock: new FakeClock(),
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(
      /debug: pace: 4 requests at a time \(the service answered 503 \(overloaded\)\)/,
    );
    expect(r.stderr).toMatch(/reading 5 payouts back before deciding anything/);
    expect(svc.held.size).toBe(40);
    expect(svc.appliedTwice()).toEqual([]);
  });
});
