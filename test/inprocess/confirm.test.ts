import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tempHome } from '../helpers/cli.js';
import { type CreatePolicy, LedgerService } from '../helpers/ledger-service.js';
import {
  clockStoppedAtLongWait,
  FakeClock,
  type MainOptions,
  type MainResult,
  runMain,
} from '../helpers/main.js';

// Issue 18: what earlier runs did is known before the question, which names what will move;
// a file sent in full asks nothing.

let svc: LedgerService;
let home: ReturnType<typeof tempHome>;
let file: string;
let clock: FakeClock;

/** Ten payouts of 1.25 EUR, then one of 1,234,567.00 EUR when `big`. */
function writeRun(big = false): void {
  const rows = Array.from({ length: 10 }, (_, i) => `ROW-${i + 1},1.25,EUR,r${i + 1}@example.com`);
  if (big) rows.push('ROW-BIG,1234567.00,EUR,big@example.com');
  writeFileSync(file, `reference_id,amount,currency,recipient\n${rows.join('\n')}\n`);
}

async function start(policy: CreatePolicy = () => ({})): Promise<void> {
  svc = await LedgerService.start(policy);
}

beforeEach(() => {
  home = tempHome();
  file = join(home.dir, 'run.csv');
  clock = new FakeClock();
  writeRun();
});
afterEach(async () => {
  await svc?.close();
  home.cleanup();
});

/** `payouts send run.csv ARGS` against the ledger service, 2 payouts a request, 1 at a time. */
function send(args: string[], opts: MainOptions = {}): Promise<MainResult> {
  return runMain(['send', file, '--chunk-size', '2', '--concurrency', '1', ...args], {
    env: { ...svc.env(home.env), PAYOUTS_TIMEOUT: '2', NO_COLOR: '1' },
    clock,
    ...opts,
  });
}

/** The first run, stopped by Ctrl-C after its second request: 4 sent, 6 not. */
async function interruptedRun(): Promise<string> {
  const stop = new AbortController();
  await start((n) => {
    if (n === 2) stop.abort();
    return {};
  });
  const r = await send(['--yes', '--json'], { interrupt: stop.signal });
  expect(r.code).toBe(130);
  return (JSON.parse(r.stdout) as { run_id: string }).run_id;
}

/** Each payout the service holds, applied once. */
function expectEachOnce(count: number): void {
  expect(svc.held.size).toBe(count);
  expect(svc.appliedTwice()).toEqual([]);
}

describe('the confirmation names what this run will send', () => {
  it('a resumed run shows what went earlier, by which run, and asks about the rest only', async () => {
    const runId = await interruptedRun();
    const r = await send([], { terminal: { columns: 100 }, stdin: 'y\n' });
    expect(r.stderr).toMatch(/Payouts: +10\n/);
    expect(r.stderr).toMatch(/Totals: +EUR 12\.50 +\(10 payouts\)\n/);
    expect(r.stderr).toMatch(/Sent earlier: +EUR +5\.00 +\(4 payouts; not sent again\)\n/);
    expect(r.stderr).toMatch(new RegExp(`by run ${runId} on 2026-11-24 12:00 UTC\\n`));
    expect(r.stderr).toMatch(/To send now: +EUR +7\.50 +\(6 payouts\)\n/);
    expect(r.stderr).toMatch(/Requests: +3 \(up to 2 payouts each/);
    expect(r.stderr).toContain('Send 6 payouts (EUR 7.50)? They cannot be taken back. [y/N]');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/10 payouts: 10 succeeded, 0 failed, 0 pending \(4 sent earlier/);
    expectEachOnce(10);
  });

  it('No at the question sends nothing', async () => {
    await interruptedRun();
    const r = await send([], { terminal: { columns: 100 }, stdin: 'n\n' });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/not confirmed: nothing was sent/);
    expectEachOnce(4);
  });

  it('groups totals by thousands on a terminal, in the summary and the question', async () => {
    writeRun(true);
    await start();
    const r = await send([], { terminal: { columns: 100 }, stdin: 'y\n' });
    expect(r.stderr).toMatch(/Totals: +EUR 1,234,579\.50 +\(11 payouts\)/);
    expect(r.stderr).toMatch(/To send now: +all 11 payouts/);
    expect(r.stderr).toContain('Send 11 payouts (EUR 1,234,579.50)? They cannot be taken back.');
    expect(r.code).toBe(0);
  });

  it('--max-total applies to what this run sends, not to what went earlier', async () => {
    await interruptedRun();
    const over = await send(['--yes', '--max-total', 'EUR=7.49']);
    expect(over.code).toBe(2);
    expect(over.stderr).toMatch(
      /this run would send EUR 7\.50 \(of EUR 12\.50 in the files, EUR 5\.00 was sent earlier\), above the limit of EUR 7\.49; nothing was sent/,
    );
    expectEachOnce(4);
    const within = await send(['--yes', '--max-total', 'EUR=7.50']);
    expect(within.stderr).toMatch(/Limit: +--max-total EUR 7\.50, on what this run sends/);
    expect(within.code).toBe(0);
    expectEachOnce(10);
  });

  it('--dry-run --json splits the files by what the service was sent earlier', async () => {
    await interruptedRun();
    const r = await send(['--dry-run', '--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      payout_count: 10,
      totals: { EUR: { count: 10, total: '12.50' } },
      sent_earlier: { payout_count: 4, totals: { EUR: { count: 4, total: '5.00' } } },
      to_read_back: { payout_count: 0, totals: {} },
      to_send: { payout_count: 6, totals: { EUR: { count: 6, total: '7.50' } }, request_count: 3 },
    });
    expectEachOnce(4);
  });

  it('payouts left in flight are shown to be read back, and the question says so', async () => {
    const { clock: slow, stop } = clockStoppedAtLongWait();
    await start((n) => (n === 3 ? { apply: 'none', cut: true } : {}));
    const first = await send(['--yes', '--json'], { interrupt: stop.signal, clock: slow });
    expect(first.code).toBe(130);
    // The fourth request may have gone out while the third waited aside (issue 33).
    const left = 8 - svc!.held.size;
    const total = (left * 1.25).toFixed(2);
    const r = await send([], { terminal: { columns: 100 }, stdin: 'y\n' });
    expect(r.stderr).toMatch(
      /To read back: +EUR +2\.50 +\(2 payouts; sent only if the service does not have them\)/,
    );
    expect(r.stderr).toMatch(new RegExp(`To send now: +EUR +${total} +\\(${left} payouts\\)`));
    expect(r.stderr).toContain(
      `Send ${left} payouts (EUR ${total}), and those of the 2 payouts to read back (EUR 2.50) that the service does not have? They cannot be taken back.`,
    );
    expect(r.code).toBe(0);
    expectEachOnce(10);
  });
});

describe('a file sent in full asks nothing', () => {
  it('says so in one line, shows the recorded results and exits from their statuses', async () => {
    await start();
    const runId = (JSON.parse((await send(['--yes', '--json'])).stdout) as { run_id: string })
      .run_id;
    // At a terminal with nothing typed: a question would be refused, exit 130.
    const r = await send([], { terminal: { columns: 100 } });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(
      `Nothing to send: all 10 payouts were sent earlier, by run ${runId} on 2026-11-24 12:00 UTC. Their recorded results:`,
    );
    expect(r.stderr).not.toMatch(/\[y\/N\]|Totals:/);
    expect(r.stdout).toMatch(/10 payouts: 10 succeeded, 0 failed, 0 pending \(10 sent earlier/);
    expectEachOnce(10);
  });

  it('under --json: every recorded result, no question, the exit of a failed status', async () => {
    // The service holds them as failed too: a stated failure is read back before it counts.
    await start(() => ({
      heldAs: 'failed',
      body: (results) => ({
        success: true,
        message: ['Payouts processed'],
        data: { results: results.map((x) => ({ ...x, status: 'failed', message: 'closed' })) },
      }),
    }));
    expect((await send(['--yes', '--json'])).code).toBe(4);
    const r = await send(['--json']);
    expect(r.code).toBe(4);
    const d = JSON.parse(r.stdout) as {
      payout_count: number;
      failed_count: number;
      sent_earlier_count: number;
      results: Array<{ status: string; sent_earlier?: boolean }>;
    };
    expect(d).toMatchObject({ payout_count: 10, failed_count: 10, sent_earlier_count: 10 });
    expect(d.results.every((x) => x.status === 'failed' && x.sent_earlier)).toBe(true);
    expect(r.stderr).toMatch(
      /^Nothing to send: run [0-9a-f]{16} on .* sent all 10 payouts; all of them failed at the service, and a failed payout needs a new reference_id/m,
    );
    expect(r.stderr).not.toContain('sent earlier');
    expectEachOnce(10);
  });
});
