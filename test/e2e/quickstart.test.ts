import { afterEach, describe, expect, it } from 'vitest';
import { parseJsonStdout, runCli, sample, tempHome } from '../helpers/cli.js';

let home: ReturnType<typeof tempHome> | undefined;
afterEach(() => {
  home?.cleanup();
  home = undefined;
});

describe('quick start', () => {
  it('sends the sample to the sandbox, finds a payout by reference, and a re-run sends nothing again', async () => {
    home = tempHome();
    const first = await runCli(['send', sample('payouts.csv'), '--sandbox'], { env: home.env });
    expect(first.stderr).toMatch(/SANDBOX/);
    // On a pipe stdout holds the table alone; the closing line goes to stderr.
    expect(first.stderr).toMatch(/SANDBOX 12 payouts: 12 succeeded, 0 failed, 0 pending/);
    expect(first.stdout.split('\n')[0]).toBe(
      'reference_id\tstatus\tamount\tcharges\ttransaction_id\tmessage\tretried_as',
    );
    expect(first.code).toBe(0);

    const status = await runCli(['status', 'PO-2026-11-0007', '--sandbox', '--json'], {
      env: home.env,
    });
    expect(status.code).toBe(0);
    expect(parseJsonStdout<{ results: unknown[] }>(status).results).toMatchObject([
      { reference_id: 'PO-2026-11-0007', status: 'success', record: { currency: 'BHD' } },
    ]);

    const again = await runCli(['send', sample('payouts.csv'), '--sandbox'], { env: home.env });
    expect(again.code).toBe(0);
    expect(again.stderr).toMatch(/12 sent earlier, not sent again/);
  });

  // --help and a mistyped option are in-process: test/unit/cli/help.test.ts.
  it('--version prints the package version', async () => {
    const r = await runCli(['--version']);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });
});
