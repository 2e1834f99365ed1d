import { describe, expect, it } from 'vitest';
import { ledgerPerTest } from '../helpers/ledger-service.js';
import { queryOne, teamRoles } from '../helpers/pg.js';
import { RETRY_HEADER, sharedRetrySetUp } from '../helpers/retry.js';

// A retry sent through an approved prepared run keeps its link to the payout it retries,
// and the approval binds that link: the original is then paid once, whichever way it went.

const fixture = ledgerPerTest();

/** An empty history, a service failing `failing`, a runner as a role's URL, a writer of files. */
const setUp = (failing: string) => sharedRetrySetUp(fixture, [failing]);

describe('a retry prepared for approval', () => {
  it('is sent by send --approved as a retry: the original is paid by it, a second retry refused', async () => {
    const { admin, svc, run, write } = await setUp('JUN-2');
    const june = write('june.csv', [
      'reference_id,amount,currency,recipient,description',
      'JUN-1,10.00,EUR,jun1@ex.com,June 1',
      'JUN-2,20.00,EUR,jun2@ex.com,June 2',
    ]);
    const sent = await run(admin, ['send', june, '--yes', '--chunk-size', '1']);
    expect(sent.code).toBe(4);
    expect((await run(admin, ['approvals', 'require'])).code).toBe(0);
    const { ana, bob } = await teamRoles(admin);

    // Ana prepares the retry of JUN-2 (and a payout of its own beside it); Bob approves.
    const retry = write('retry.csv', [
      RETRY_HEADER,
      'JUN-2,JUN-2-R1,20.00,EUR,jun2@ex.com,June 2',
      'JUN-3,,30.00,EUR,jun3@ex.com,June 3',
    ]);
    const prepared = await run(ana, ['send', retry, '--prepare']);
    expect(prepared.code, prepared.stderr).toBe(0);
    const prep = /^Prepared run (p[0-9a-f]{15})/m.exec(prepared.stdout)![1]!;
    const row = await queryOne<{ retry_of: string | null }>(
      admin,
      `SELECT x.retry_of FROM prepared_payouts x JOIN prepared_runs p ON p.id = x.prep
       WHERE p.prep_id = $1 AND x.reference_id = 'JUN-2-R1'`,
      [prep],
    );
    expect(row.retry_of).toBe('JUN-2');
    // The approver's document and screen name the retry and its original.
    const shown = await run(bob, ['runs', 'show', prep]);
    expect(shown.stdout).toMatch(/JUN-2-R1\t.*retries JUN-2/);
    const decision = await run(bob, ['approve', prep, '--yes', '--json']);
    expect(decision.code, decision.stderr).toBe(0);
    const payouts = JSON.parse(decision.stdout).payouts as Array<{ retry_of: string | null }>;
    expect(payouts.filter((p) => p.retry_of !== null)).toEqual([
      expect.objectContaining({ reference_id: 'JUN-2-R1', retry_of: 'JUN-2' }),
    ]);

    const approved = await run(ana, ['send', '--approved', prep, '--yes']);
    expect(approved.code, approved.stderr).toBe(0);
    expect(svc.posts.get('JUN-2-R1')).toBe(1);
    expect(svc.posts.get('JUN-3')).toBe(1);
    const link = await queryOne<{ retry_of: string | null }>(
      admin,
      "SELECT retry_of FROM payouts WHERE reference_id = 'JUN-2-R1'",
    );
    expect(link.retry_of).toBe('JUN-2');

    // The original tells the chain; a second retry is refused before anything is sent.
    const status = await run(ana, ['status', 'JUN-2']);
    expect(status.stdout).toMatch(/Retried as +JUN-2-R1 in run [0-9a-f]{16}: success/);
    // Paid by its retry, on the service's word on the retry: it counts as paid
    // (docs/history.md#a-failed-payout-that-its-retry-paid).
    expect(status.code).toBe(0);
    expect((await run(ana, ['status', 'JUN-2-R1'])).code).toBe(0);
    const creates = svc.creates;
    const again = write('again.csv', [RETRY_HEADER, 'JUN-2,JUN-2-R2,20.00,EUR,jun2@ex.com,June 2']);
    const refused = await run(ana, ['send', again, '--prepare']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /new_reference_id "JUN-2-R2": retries reference_id "JUN-2", already retried as "JUN-2-R1" in run [0-9a-f]{16}, which succeeded/,
    );
    expect(svc.creates).toBe(creates);
  });

  it('binds the link: the same rows without it are not the approved run', async () => {
    const { admin, svc, run, write } = await setUp('JUL-1');
    const july = write('july.csv', [
      'reference_id,amount,currency,recipient',
      'JUL-1,5.00,EUR,jul1@ex.com',
    ]);
    expect((await run(admin, ['send', july, '--yes'])).code).toBe(4);
    expect((await run(admin, ['approvals', 'require'])).code).toBe(0);
    const { ana, bob } = await teamRoles(admin);
    const retry = write('retry.csv', [
      'reference_id,new_reference_id,amount,currency,recipient',
      'JUL-1,JUL-1-R1,5.00,EUR,jul1@ex.com',
    ]);
    const prep = /^Prepared run (p[0-9a-f]{15})/m.exec(
      (await run(ana, ['send', retry, '--prepare'])).stdout,
    )![1]!;
    expect((await run(bob, ['approve', prep, '--yes'])).code).toBe(0);
    // The new reference sent as a payout of its own (no link) is not what Bob approved.
    const plain = write('plain.csv', [
      'reference_id,amount,currency,recipient',
      'JUL-1-R1,5.00,EUR,jul1@ex.com',
    ]);
    const unlinked = await run(ana, ['send', plain, '--yes']);
    expect(unlinked.code).toBe(9);
    expect(unlinked.stderr).toContain(
      `differ from approved run ${prep} (approved for ${retry}): JUL-1-R1: EUR 5.00 to jul1@ex.com here, EUR 5.00 to jul1@ex.com, retrying JUL-1 approved`,
    );
    expect(svc.posts.get('JUL-1-R1')).toBeUndefined();
    // The retry file itself is the approved run.
    const linked = await run(ana, ['send', retry, '--yes']);
    expect(linked.code, linked.stderr).toBe(0);
    expect(svc.posts.get('JUL-1-R1')).toBe(1);
  });
});
