import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseJsonStdout, tempHomesPerTest } from '../helpers/cli.js';
import { FakeClock, runMain } from '../helpers/main.js';

// The sandbox rehearses what happens after a send (issue 47.5): a payout answered pending
// that fails later, a success returned later. `send --sandbox` and `status --sandbox` run on
// one fake clock, which the sandbox they start reads too: stepping it past the delay is all
// it takes for the late outcome to show.

const home = tempHomesPerTest();

/** A month's file: a late failure, a return, and a payout that stays paid. */
function monthFile(dir: string, recipients: string[]): string {
  const file = join(dir, 'month.csv');
  const rows = recipients.map((r, i) => `M-${i + 1},${100 + i}.00,EUR,${r}`);
  writeFileSync(file, `reference_id,amount,currency,recipient\n${rows.join('\n')}\n`);
  return file;
}

/** The status of each reference, as `status --json` reads it. */
function statuses(r: { stdout: string; stderr: string }): Record<string, string | null> {
  const doc = parseJsonStdout<{ results: Array<{ reference_id: string; status: string | null }> }>(
    r,
  );
  return Object.fromEntries(doc.results.map((d) => [d.reference_id, d.status]));
}

describe('late outcomes in the sandbox', () => {
  it('shows `status` a late failure and a return once the pending delay has passed', async () => {
    const h = home();
    const clock = new FakeClock();
    const run = (args: string[]) => runMain(args, { env: h.env, clock });
    const file = monthFile(h.dir, [
      'ana+late-failed@example.com',
      'bo+returned@example.com',
      'cy@example.com',
    ]);
    const sent = await run(['send', file, '--sandbox', '--yes']);
    // Answered pending: not final yet.
    expect(sent.code).toBe(5);
    const refs = ['status', 'M-1', 'M-2', 'M-3', '--sandbox', '--json'];
    const before = await run(refs);
    expect(before.code).toBe(5);
    expect(statuses(before)).toEqual({ 'M-1': 'pending', 'M-2': 'success', 'M-3': 'success' });

    clock.t += 30_000;
    const after = await run(refs);
    expect(statuses(after)).toEqual({ 'M-1': 'failed', 'M-2': 'failed', 'M-3': 'success' });
    expect(after.code).toBe(4);
    // One payout on its own, as support would look it up.
    const one = await run(['status', 'M-2', '--sandbox']);
    expect(one.code).toBe(4);
    expect(one.stdout).toMatch(/Status\s+failed/);
  });

  it('takes the triggers and delays of PAYOUTS_SANDBOX_TRIGGERS for `send --sandbox`', async () => {
    const h = home();
    const clock = new FakeClock();
    const env = { ...h.env, PAYOUTS_SANDBOX_TRIGGERS: '@bank.example:success:canceled:5000' };
    const run = (args: string[]) => runMain(args, { env, clock });
    const file = monthFile(h.dir, ['ana@bank.example', 'bo@example.com']);
    expect((await run(['send', file, '--sandbox', '--yes'])).code).toBe(0);
    const refs = ['status', 'M-1', 'M-2', '--sandbox', '--json'];
    clock.t += 4_999;
    expect(statuses(await run(refs))).toEqual({ 'M-1': 'success', 'M-2': 'success' });
    clock.t += 1;
    const after = await run(refs);
    expect(statuses(after)).toEqual({ 'M-1': 'canceled', 'M-2': 'success' });
    expect(after.code).toBe(4);
  });

  it('fails one payout of a real file by its reference, and pays a new reference to it', async () => {
    const h = home();
    const clock = new FakeClock();
    const env = { ...h.env, PAYOUTS_SANDBOX_TRIGGERS: 'ref=M-2:pending:failed' };
    const run = (args: string[]) => runMain(args, { env, clock });
    const file = monthFile(h.dir, ['ana@example.com', 'bo@example.com']);
    expect((await run(['send', file, '--sandbox', '--yes'])).code).toBe(5);
    clock.t += 30_000;
    expect(statuses(await run(['status', 'M-1', 'M-2', '--sandbox', '--json']))).toEqual({
      'M-1': 'success',
      'M-2': 'failed',
    });
    // The same payout to the same recipient, under a new reference: the rule does not apply.
    const again = join(h.dir, 'again.csv');
    writeFileSync(
      again,
      'reference_id,amount,currency,recipient\nM-2-R1,101.00,EUR,bo@example.com\n',
    );
    expect((await run(['send', again, '--sandbox', '--yes'])).code).toBe(0);
    clock.t += 30_000;
    expect(statuses(await run(['status', 'M-2-R1', '--sandbox', '--json']))).toEqual({
      'M-2-R1': 'success',
    });
  });

  it('refuses a bad PAYOUTS_SANDBOX_TRIGGERS, naming it, and sends nothing', async () => {
    const h = home();
    const env = { ...h.env, PAYOUTS_SANDBOX_TRIGGERS: '+x:bounced' };
    const file = monthFile(h.dir, ['ana@example.com']);
    const r = await runMain(['send', file, '--sandbox', '--yes'], { env, clock: new FakeClock() });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('PAYOUTS_SANDBOX_TRIGGERS "+x:bounced": STATUS "bounced"');
    const s = await runMain(['status', 'M-1', '--sandbox'], { env: h.env });
    expect(s.code).toBe(6);
  });
});
