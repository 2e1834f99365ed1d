import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerPerTest } from '../helpers/ledger-service.js';
import { FakeClock, type MainResult, PacedClock, runMain, runQueued } from '../helpers/main.js';
import { type PrivatePg, startPrivatePg } from '../helpers/pg-private.js';
import { prefixedRun, writeRun } from '../helpers/sandbox.js';
import { expectEveryRow, type SendDoc } from '../helpers/stopped-runs.js';

// Issue 31 item 3: the shared history's PostgreSQL going away mid-send is a stop, not a
// crash. The tests' shared server must stay up, so these stop a private one.

const fixture = ledgerPerTest();
let server: PrivatePg;

beforeAll(async () => {
  server = await startPrivatePg();
}, 60_000);
afterAll(async () => {
  await server?.remove();
});

/** A database of its own on the private server: a schema the URL's search_path selects. */
async function freshSchema(name: string): Promise<string> {
  const c = new pg.Client({ connectionString: server.url });
  await c.connect();
  try {
    await c.query(`CREATE SCHEMA ${name}`);
  } finally {
    await c.end();
  }
  return `${server.url}?options=${encodeURIComponent(`-c search_path=${name}`)}`;
}

describe('the shared history lost mid-send', () => {
  it.each([
    ['stopped', 'lost_stopped', () => server.stop()],
    [
      'restarted',
      'lost_restarted',
      async () => {
        await server.stop();
        await server.start();
      },
    ],
  ])(
    '%s: every row reported, the lost connection named, exit 7; the next run finishes once',
    async (_, schema, outage) => {
      const url = await freshSchema(schema);
      // The third request is answered once the server is down (or back): it was applied.
      const svc = await fixture.start((n) => (n === 3 ? { hold: outage() } : {}));
      const home = fixture.home();
      const { file, refs } = writeRun(home.dir, 20);
      const args = ['send', file, '--yes', '--json', '--chunk-size', '2', '--concurrency', '1'];
      const env = { ...svc.env(home.env), PAYOUTS_STATE_URL: url, PAYOUTS_TIMEOUT: '1' };
      const r = await runMain(args, { env, clock: new FakeClock() }).finally(() => server.start());
      expect(r.code, r.stderr).toBe(7);
      const doc = JSON.parse(r.stdout) as SendDoc & { run_id: string | null };
      expect(doc.run_id).not.toBeNull();
      expectEveryRow(doc, refs);
      expect(doc.success_count).toBe(svc.held.size);
      expect(doc.error!.message).toMatch(/connection .*lost/);
      expect(doc.error!.message).not.toContain('giving back the run lock');
      // Only requests whose intent the history held before it went away (two prepared ahead).
      expect(svc.creates).toBeLessThanOrEqual(3 + 2);
      const again = await runMain(args, { env, clock: new FakeClock() });
      expect(again.code, again.stderr).toBe(0);
      expect([...svc.held.keys()].sort()).toEqual([...refs].sort());
      expect(svc.appliedTwice()).toEqual([]);
    },
    60_000,
  );
});

describe('the shared history restarted while sends wait for the lock (issue 51 item 3)', () => {
  it('none of the waiting sends fails: each reconnects and sends in turn; the one recording exits 7', async () => {
    const url = await freshSchema('wait_restart');
    // The sending job's first request is answered only once the server is back.
    let answer!: () => void;
    const back = new Promise<void>((r) => {
      answer = r;
    });
    const svc = await fixture.start((n) => (n === 1 ? { hold: back } : {}));
    const home = fixture.home();
    const env = { ...svc.env(home.env), PAYOUTS_STATE_URL: url, PAYOUTS_TIMEOUT: '1' };
    const jobArgs = ['send', prefixedRun(home.dir, 'JOB'), '--yes', '--json', '--chunk-size', '1'];
    const job = runMain(jobArgs, { env, clock: new PacedClock() });
    while (svc.creates < 1) await new Promise((r) => setTimeout(r, 10));
    const waiting: Array<Promise<MainResult>> = [];
    for (const name of ['A', 'B', 'C']) {
      const send = runQueued(['send', prefixedRun(home.dir, name), '--yes', '--wait=600'], { env });
      waiting.push(send.done);
      await send.queued;
    }
    await server.stop();
    await server.start();
    answer();
    const [a, b, c] = await Promise.all(waiting);
    for (const r of [a, b, c]) expect(r!.code, r!.stderr).toBe(0);
    expect([...svc.held.keys()].filter((k) => !k.startsWith('JOB')).sort()).toEqual([
      'A-1',
      'A-2',
      'B-1',
      'B-2',
      'C-1',
      'C-2',
    ]);
    // Only the send that was recording when the connection went stops, exit 7; run again, it finishes.
    const stopped = await job;
    expect(stopped.code, stopped.stderr).toBe(7);
    const again = await runMain(jobArgs, { env, clock: new PacedClock() });
    expect(again.code, again.stderr).toBe(0);
    expect(svc.held.has('JOB-1') && svc.held.has('JOB-2')).toBe(true);
    expect(svc.appliedTwice()).toEqual([]);
  }, 90_000);
});
