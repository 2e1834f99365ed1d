import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type CreatePolicy, type LedgerService, ledgerPerTest } from '../helpers/ledger-service.js';
import { clockStoppedAtLongWait, FakeClock, type MainResult, runMain } from '../helpers/main.js';
import type { SendDoc } from '../helpers/stopped-runs.js';

// Issue 18: every row of the input appears in every result, whatever stopped the run, and
// the counts add up to the input's rows.

let svc: LedgerService | undefined;
const fixture = ledgerPerTest();

/** Sends 10 payouts of 1.25 EUR, 2 a request, one request at a time. */
async function send(
  policy: CreatePolicy,
  opts: { interrupt?: AbortController; clock?: FakeClock; json?: boolean } = {},
): Promise<MainResult> {
  svc = await fixture.start(policy);
  const home = fixture.home();
  const file = join(home.dir, 'run.csv');
  const rows = Array.from({ length: 10 }, (_, i) => `ROW-${i + 1},1.25,EUR,r${i + 1}@example.com`);
  writeFileSync(file, `reference_id,amount,currency,recipient\n${rows.join('\n')}\n`);
  const args = ['send', file, '--yes', '--chunk-size', '2', '--concurrency', '1'];
  return runMain(opts.json === false ? args : [...args, '--json'], {
    env: { ...svc.env(home.env), PAYOUTS_TIMEOUT: '2' },
    clock: opts.clock ?? new FakeClock(),
    interrupt: opts.interrupt?.signal,
  });
}

/** The --json document, with its counts checked to add up to every input row. */
function doc(r: MainResult): SendDoc {
  const d = JSON.parse(r.stdout) as SendDoc;
  expect(d.payout_count).toBe(10);
  expect(d.results).toHaveLength(10);
  const sum =
    d.success_count! + d.failed_count! + d.pending_count! + d.unknown_count! + d.not_sent_count!;
  expect(sum).toBe(d.payout_count);
  return d;
}

describe('every row in every result', () => {
  it('interrupted before the first request: all ten not sent', async () => {
    const stop = new AbortController();
    stop.abort();
    const r = await send(() => ({}), { interrupt: stop });
    const d = doc(r);
    expect(d.not_sent_count).toBe(10);
    expect(r.code).toBe(130);
    expect(svc!.creates).toBe(0);
    expect(r.stderr).toMatch(
      /Interrupted: 0 of 10 payouts sent \(0 succeeded\); 10 not sent, EUR 12\.50\. Run the same command again to send them; nothing will be sent twice\./,
    );
  });

  it('interrupted mid-run: the sent ones succeeded, the rest not sent, none called failed', async () => {
    const stop = new AbortController();
    const r = await send(
      (n) => {
        if (n === 2) stop.abort();
        return {};
      },
      { interrupt: stop, json: false },
    );
    expect(r.code).toBe(130);
    // On a pipe the closing line goes to stderr: stdout holds only the table's rows.
    expect(r.stderr).toMatch(/10 payouts: 4 succeeded, 0 failed, 0 pending, 6 not sent/);
    expect(r.stdout).toMatch(
      /Interrupted: 4 of 10 payouts sent \(4 succeeded\); 6 not sent, EUR 7\.50\./,
    );
    // The six rows never sent are summed up, not listed one by one.
    expect(r.stderr).toMatch(/6 payouts not sent, not listed \(use --all to list every row\)/);
    expect(r.stdout).not.toMatch(/ROW-10/);
  });

  it('interrupted during a read-back: the unknown ones and the rest add up, exit 130', async () => {
    const { clock, stop } = clockStoppedAtLongWait();
    const r = await send((n) => (n === 3 ? { apply: 'none', cut: true } : {}), {
      interrupt: stop,
      clock,
    });
    const d = doc(r);
    expect(d.unknown_count).toBe(2);
    // The fourth request may go out while the third waits aside for its read-back (issue 33).
    expect(d.success_count).toBeGreaterThanOrEqual(4);
    expect(d.success_count! + d.not_sent_count!).toBe(8);
    // An interruption is 130, as the README's table says, whatever it left in doubt.
    expect(r.code).toBe(130);
    expect(d).toMatchObject({ interrupted: true, error: { type: 'InterruptedError' } });
    expect(d.error?.message).toContain('2 in doubt');
    expect(d.error?.message).toContain('reads back the payouts in doubt before sending anything');
    expect(d.error?.message).not.toContain('to send them');
  });

  it('stopped by a 401: every row is in the results, the refused and the unreached not sent', async () => {
    const r = await send((n) =>
      n === 2
        ? {
            apply: 'none',
            status: 401,
            body: { success: false, message: ['Invalid API credentials'], data: [] },
          }
        : {},
    );
    const d = doc(r);
    expect(d).toMatchObject({ success_count: 2, failed_count: 0, not_sent_count: 8 });
    expect(r.code).toBe(3);
  });
});
