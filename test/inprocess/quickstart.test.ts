import { describe, expect, it } from 'vitest';
import { parseJsonStdout, sample, tempHomesPerTest } from '../helpers/cli.js';
import { FakeClock, runMain } from '../helpers/main.js';

// The README's quick start, moved from test/e2e/quickstart.test.ts: what it shows is main's, not
// the process's (the built binary's --version stays there).

const home = tempHomesPerTest();

describe('quick start', () => {
  it('sends the sample to the sandbox, finds a payout by reference, and a re-run sends nothing again', async () => {
    const { env } = home();
    const clock = new FakeClock();
    const run = (args: string[]) => runMain(args, { env, clock });
    const first = await run(['send', sample('payouts.csv'), '--sandbox']);
    expect(first.stderr).toMatch(/SANDBOX/);
    // On a pipe stdout holds the table alone; the closing line goes to stderr.
    expect(first.stderr).toMatch(/SANDBOX 12 payouts: 12 succeeded, 0 failed, 0 pending/);
    expect(first.stdout.split('\n')[0]).toBe(
      'reference_id\tstatus\tamount\tcharges\ttransaction_id\tmessage\tretried_as',
    );
    expect(first.code).toBe(0);

    const status = await run(['status', 'PO-2026-11-0007', '--sandbox', '--json']);
    expect(status.code).toBe(0);
    expect(parseJsonStdout<{ results: unknown[] }>(status).results).toMatchObject([
      { reference_id: 'PO-2026-11-0007', status: 'success', record: { currency: 'BHD' } },
    ]);

    const again = await run(['send', sample('payouts.csv'), '--sandbox']);
    expect(again.code).toBe(0);
    expect(again.stderr).toMatch(/12 sent earlier, not sent again/);
  });
});
