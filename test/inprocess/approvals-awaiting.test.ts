import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseJsonStdout } from '../helpers/cli.js';
import { ledgerPerTest } from '../helpers/ledger-service.js';
import { FakeClock, runMain } from '../helpers/main.js';
import { recycledDatabase, teamRoles } from '../helpers/pg.js';

// Issue 49: an approver asks "what awaits me?"; `approvals` answers, and `approve` without a
// run shows the same list instead of only "missing required argument".

const fixture = ledgerPerTest();

/** A payout file of `n` rows NAME-1… */
function payoutFile(dir: string, name: string, n: number): string {
  const file = join(dir, `${name.toLowerCase()}.csv`);
  const rows = Array.from({ length: n }, (_, i) => `${name}-${i + 1},${i + 1}.00,EUR,r${i}@ex.com`);
  writeFileSync(file, `reference_id,amount,currency,recipient\n${rows.join('\n')}\n`);
  return file;
}

interface Listed {
  role: string;
  runs: Array<{ prepared_run_id: string; approvals: { given: number; needed: number } }>;
}

describe('what awaits my approval', () => {
  it('lists the runs others prepared that I have not approved, with the approvals so far', async () => {
    const admin = await recycledDatabase();
    const svc = await fixture.start();
    const home = fixture.home();
    const as = (url: string, args: string[]) =>
      runMain(args, {
        env: { ...svc.env(home.env), PAYOUTS_STATE_URL: url },
        clock: new FakeClock(),
        terminal: { columns: 160 },
      });
    expect((await as(admin, ['approvals', 'require', '--approvers', '2'])).code).toBe(0);
    const { ana, bob } = await teamRoles(admin);
    const { ana: carol } = await teamRoles(admin);
    const prepare = async (name: string, n: number) => {
      const r = await as(ana, ['send', payoutFile(home.dir, name, n), '--prepare']);
      expect(r.code).toBe(0);
      return /^Prepared run (p[0-9a-f]{15})/m.exec(r.stdout)![1]!;
    };
    const june = await prepare('JUNE', 2);
    const july = await prepare('JULY', 3);
    const list = async (url: string) => {
      const r = await as(url, ['approvals', '--json']);
      expect(r.code).toBe(0);
      return parseJsonStdout<Listed>(r);
    };

    // Ana prepared both: nothing awaits her.
    expect((await list(ana)).runs).toEqual([]);
    const mine = await as(ana, ['approvals']);
    expect(mine.stdout).toMatch(/^Nothing awaits approval by role ana_\w+\.$/m);

    // Bob sees both, newest first; once he approves June it leaves his list, not Carol's.
    expect((await list(bob)).runs.map((r) => r.prepared_run_id)).toEqual([july, june]);
    expect((await as(bob, ['approve', june, '--yes'])).code).toBe(0);
    expect((await list(bob)).runs.map((r) => r.prepared_run_id)).toEqual([july]);
    const forCarol = await list(carol);
    expect(forCarol.runs.map((r) => [r.prepared_run_id, r.approvals])).toEqual([
      [july, { given: 0, needed: 2 }],
      [june, { given: 1, needed: 2 }],
    ]);
    const table = await as(carol, ['approvals']);
    expect(table.stdout).toMatch(/^Awaiting approval by role ana_\w+ \(2 prepared runs\):$/m);
    expect(table.stdout).toMatch(new RegExp(`^${june} .* 1 of 2 approvals, expires `, 'm'));
    // A second approval decides June: it awaits no one any more.
    expect((await as(carol, ['approve', june, '--yes'])).code).toBe(0);
    expect((await list(carol)).runs.map((r) => r.prepared_run_id)).toEqual([july]);

    // approve without a run: the same list, and what to type; exit 2, nothing recorded.
    const bare = await as(bob, ['approve']);
    expect(bare.code).toBe(2);
    expect(bare.stdout).toContain(july);
    expect(bare.stderr).toMatch(/name the prepared run to approve: payouts approve RUN/);
    const bareJson = await as(bob, ['approve', '--json']);
    expect(bareJson.code).toBe(2);
    expect(parseJsonStdout<{ command: string }>(bareJson).command).toBe('approve');
  });
});
