import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseJsonStdout, tempHomesPerTest } from '../helpers/cli.js';
import { FakeClock, runMain } from '../helpers/main.js';

// What `status` reads is kept (issue 47.2): the history takes the service's later word, and
// every reader of it (runs, runs show, its --failed-out, a re-run) follows.

const home = tempHomesPerTest();

function monthFile(dir: string, recipients: string[]): string {
  const file = join(dir, 'month.csv');
  const rows = recipients.map((r, i) => `M-${i + 1},${100 + i}.00,EUR,${r}`);
  writeFileSync(file, `reference_id,amount,currency,recipient\n${rows.join('\n')}\n`);
  return file;
}

describe('status keeps what it reads', () => {
  it('turns a late failure into a failed payout of its run, retried through the tool', async () => {
    const h = home();
    const clock = new FakeClock();
    const env = { ...h.env, PAYOUTS_SANDBOX_TRIGGERS: 'ref=M-1:pending:failed' };
    const run = (args: string[]) => runMain(args, { env, clock });
    const file = monthFile(h.dir, ['ana@example.com', 'bo@example.com']);
    const sent = await run(['send', file, '--sandbox', '--yes', '--json']);
    expect(sent.code).toBe(5);
    const runId = parseJsonStdout<{ run_id: string }>(sent).run_id;
    clock.t += 30_000;
    expect((await run(['status', 'M-1', 'M-2', '--sandbox'])).code).toBe(4);
    const list = await run(['runs', '--json']);
    const counts = parseJsonStdout<{ runs: Array<{ counts: object }> }>(list).runs[0]!.counts;
    expect(counts).toMatchObject({ success: 1, failed: 1, pending: 0 });
    const retry = join(h.dir, 'retry.csv');
    const out = await run([
      'runs',
      'show',
      runId,
      '--failed-out',
      retry,
      '--new-references',
      '-R1',
    ]);
    expect(out.code).toBe(0);
    expect(out.stderr).toContain('1 failed or canceled payout');
    const again = await run(['send', file, '--sandbox', '--yes']);
    expect(again.code).toBe(4);
    expect(again.stdout).toMatch(/^M-1\tfailed/m);
    expect(again.stderr).toContain('1 succeeded, 1 failed, 0 pending');
    const retried = await run(['send', retry, '--sandbox', '--yes']);
    expect(retried.code).toBe(0);
    const last = await run(['send', file, '--sandbox', '--yes', '--json']);
    expect(last.code).toBe(0);
  });
});

describe('a re-run of a sent file', () => {
  it('says how old the word on a pending payout is, and how to ask again', async () => {
    const h = home();
    const clock = new FakeClock();
    const env = { ...h.env, PAYOUTS_SANDBOX_TRIGGERS: 'ref=M-1:pending:success:600000000' };
    const run = (args: string[]) => runMain(args, { env, clock });
    const file = monthFile(h.dir, ['ana@example.com', 'bo@example.com']);
    expect((await run(['send', file, '--sandbox', '--yes'])).code).toBe(5);
    const first = await run(['send', file, '--sandbox', '--yes']);
    expect(first.code).toBe(5);
    expect(first.stdout).toMatch(
      /^M-1\tpending \(sent earlier\)\t.*not checked since it was sent: `payouts reconcile`$/m,
    );
    clock.t += 3_600_000;
    expect((await run(['status', 'M-1', '--sandbox'])).code).toBe(5);
    clock.t += 3 * 86_400_000;
    const again = await run(['send', file, '--sandbox', '--yes']);
    expect(again.stdout).toMatch(
      /^M-1\tpending \(sent earlier\)\t.*last checked 3 days ago: `payouts reconcile`$/m,
    );
    expect(again.stdout).toMatch(/^M-2\tsuccess \(sent earlier\)\t[^`]*$/m);
  });
});
