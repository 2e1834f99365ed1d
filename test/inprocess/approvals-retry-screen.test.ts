import { describe, expect, it } from 'vitest';
import { ledgerPerTest } from '../helpers/ledger-service.js';
import { teamRoles } from '../helpers/pg.js';
import { RETRY_HEADER, sharedRetrySetUp } from '../helpers/retry.js';

// The approver sees where the original of each retry row stands, in the words the send refuses
// the row with: a prepared retry whose original was paid, or retried, meanwhile is flagged
// before anyone approves it, and the send still refuses it.

const fixture = ledgerPerTest();

interface ScreenPayout {
  reference_id: string;
  retry_of: string | null;
  retry_of_state: string | null;
  attention: string[];
}

describe("the approver's screen of a prepared retry run", () => {
  it('flags the retries of a paid and a retried payout, not of a failed one; the send refuses them', async () => {
    const { admin, svc, run, write } = await sharedRetrySetUp(fixture, ['B', 'C']);
    const bc = write('bc.csv', [
      'reference_id,amount,currency,recipient',
      'B,20.00,EUR,b@ex.com',
      'C,30.00,EUR,c@ex.com',
    ]);
    expect((await run(admin, ['send', bc, '--yes', '--chunk-size', '1'])).code).toBe(4);
    const { ana, bob } = await teamRoles(admin);

    // Ana prepares the retries of B and C, and of A, which this history does not hold yet.
    const retry = write('retry.csv', [
      RETRY_HEADER,
      'A,A-R1,10.00,EUR,a@ex.com,A',
      'B,B-R1,20.00,EUR,b@ex.com,B',
      'C,C-R2,30.00,EUR,c@ex.com,C',
    ]);
    // A retry of A sent elsewhere could not be seen here: she says she knows of none.
    const unseen = await run(ana, ['send', retry, '--prepare']);
    expect(unseen.code).toBe(2);
    expect(unseen.stderr).toContain('retries reference_id "A", which this history never sent');
    const prepared = await run(ana, ['send', retry, '--prepare', '--original-elsewhere', '--json']);
    expect(prepared.code, prepared.stderr).toBe(0);
    const first = JSON.parse(prepared.stdout) as {
      prepared_run_id: string;
      payouts: ScreenPayout[];
    };
    const prep = first.prepared_run_id;
    expect(first.payouts.map((p) => p.retry_of_state)).toEqual([
      'not_in_history',
      'failed',
      'failed',
    ]);

    // Before Bob looks: A is paid by a file of its own, C by another retry.
    const a = write('a.csv', ['reference_id,amount,currency,recipient', 'A,10.00,EUR,a@ex.com']);
    const paidA = await run(admin, ['send', a, '--yes', '--json']);
    expect(paidA.code, paidA.stderr).toBe(0);
    const runA = JSON.parse(paidA.stdout).run_id as string;
    const retryC = write('retry-c.csv', [RETRY_HEADER, 'C,C-R1,30.00,EUR,c@ex.com,C']);
    const paidC = await run(admin, ['send', retryC, '--yes', '--json']);
    expect(paidC.code, paidC.stderr).toBe(0);
    const runC = JSON.parse(paidC.stdout).run_id as string;
    expect((await run(admin, ['approvals', 'require'])).code).toBe(0);

    // The screen, as a pipe has it: the rows the send will refuse first, then B's retry.
    const shown = await run(bob, ['runs', 'show', prep]);
    expect(shown.code, shown.stderr).toBe(0);
    const screen = `${shown.stdout}\n${shown.stderr}`;
    expect(screen).toMatch(
      /Retries: +3, of which 1 retries a payout already paid and 1 a payout already retried: the send will refuse them, and so the whole run \(nothing is sent\)/,
    );
    const rows = shown.stdout.split('\n').filter((l) => /^\d+\t/.test(l));
    expect(rows.map((l) => l.split('\t')[1])).toEqual(['A-R1', 'C-R2', 'B-R1']);
    expect(rows[0]).toContain(`retries A, which was paid (run ${runA} on `);
    expect(rows[0]).toMatch(/: the send will refuse this row/);
    expect(rows[1]).toContain(
      `retries C, already retried as "C-R1" in run ${runC}, which succeeded: the send will refuse this row`,
    );
    expect(rows[2]).toMatch(
      /retries B, which failed \(run [0-9a-f]{16} on [^)]*: "Account closed"\): this retry sends it/,
    );
    expect(rows[2]).not.toContain('refuse');

    // The same in the document (checked against prepared-run.schema.json by runMain).
    const decision = await run(bob, ['approve', prep, '--yes', '--json']);
    expect(decision.code, decision.stderr).toBe(0);
    const doc = JSON.parse(decision.stdout) as {
      retries: { count: number; refused_count: number };
      payouts: ScreenPayout[];
    };
    expect(doc.retries).toEqual({ count: 3, refused_count: 2 });
    const state = Object.fromEntries(doc.payouts.map((p) => [p.reference_id, p.retry_of_state]));
    expect(state).toEqual({ 'A-R1': 'paid', 'B-R1': 'failed', 'C-R2': 'retried' });
    const words = doc.payouts.find((p) => p.reference_id === 'A-R1')!.attention[0]!;

    // Approved all the same, the send refuses what the screen said it would, in the same words.
    const refused = await run(ana, ['send', '--approved', prep, '--yes']);
    expect(refused.code).toBe(2);
    const which = words.replace(/^retries A/, '').replace(/: the send will refuse this row$/, '');
    expect(refused.stderr).toContain(`retries reference_id "A"${which}`);
    expect(refused.stderr).toContain('new_reference_id "C-R2": retries reference_id "C", already');
    expect(refused.stderr).not.toContain('"B-R1"');
    expect(svc.posts.get('A-R1')).toBeUndefined();
    expect(svc.posts.get('B-R1')).toBeUndefined();

    // What is left to retry, prepared and approved again, is sent once.
    const left = write('left.csv', [RETRY_HEADER, 'B,B-R1,20.00,EUR,b@ex.com,B']);
    const again = await run(ana, ['send', left, '--prepare', '--json']);
    expect(again.code, again.stderr).toBe(0);
    const prep2 = JSON.parse(again.stdout).prepared_run_id as string;
    expect((await run(bob, ['approve', prep2, '--yes'])).code).toBe(0);
    const sent = await run(ana, ['send', left, '--yes']);
    expect(sent.code, sent.stderr).toBe(0);
    expect(svc.posts.get('B-R1')).toBe(1);
    expect(svc.posts.get('A')).toBe(1);
    expect(svc.posts.get('A-R1')).toBeUndefined();
    expect(svc.posts.get('C-R2')).toBeUndefined();
    expect(svc.appliedTwice()).toEqual([]);
  });

  it('names a retry that pays another recipient than its original, on the screen and in --json', async () => {
    const { admin, run, write } = await sharedRetrySetUp(fixture, ['B']);
    const b = write('b.csv', ['reference_id,amount,currency,recipient', 'B,20.00,EUR,b@ex.com']);
    expect((await run(admin, ['send', b, '--yes'])).code).toBe(4);
    const { ana, bob } = await teamRoles(admin);
    const retry = write('retry.csv', [RETRY_HEADER, 'B,B-R1,20.00,EUR,eve@evil.example,B']);
    const prepared = await run(ana, ['send', retry, '--prepare', '--json']);
    expect(prepared.code, prepared.stderr).toBe(0);
    const prep = JSON.parse(prepared.stdout).prepared_run_id as string;
    const doc = JSON.parse((await run(bob, ['runs', 'show', prep, '--json'])).stdout) as {
      retry_changes: Array<{
        before: { recipient: string };
        after: { recipient: string };
        matched_by: string;
      }>;
      payouts: ScreenPayout[];
    };
    expect(doc.retry_changes).toEqual([
      expect.objectContaining({
        before: expect.objectContaining({ reference_id: 'B', recipient: 'b@ex.com' }),
        after: expect.objectContaining({ reference_id: 'B-R1', recipient: 'eve@evil.example' }),
        matched_by: 'retry_of',
      }),
    ]);
    expect(doc.payouts[0]!.attention).toContain(
      'recipient changed: was b@ex.com, now eve@evil.example (its original B)',
    );
    const shown = await run(bob, ['runs', 'show', prep]);
    expect(shown.stderr).toMatch(
      /^ {2}recipient changed: B-R1 EUR 20\.00: was b@ex\.com \(its original B\), now eve@evil\.example$/m,
    );
  });
});
