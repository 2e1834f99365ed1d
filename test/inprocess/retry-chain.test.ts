import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sendJson } from '../helpers/http-servers.js';
import {
  type CreatePolicy,
  failsThese,
  holdsPending,
  ledgerPerTest,
} from '../helpers/ledger-service.js';
import { STORES, storeEnv } from '../helpers/pg.js';
import { HEADER, RETRY_HEADER, retrySetUp, row, runIdOf, sendArgs } from '../helpers/retry.js';

// Issue 38: a payout and the references that retry it are one payout (a chain). A paid
// payout is never paid again under a new reference, and a failed one never drops out of
// sight. The loopback service has its duplicate checks off: any payout made twice is counted.

const fixture = ledgerPerTest();

/** A service failing ROW-2, ROW-5 and ROW-9 (or `policy`), a file of ten, and a runner. */
async function setUp(
  withStore: (env: Record<string, string>) => Record<string, string>,
  policy: CreatePolicy = failsThese(new Set(['ROW-2', 'ROW-5', 'ROW-9'])),
) {
  const t = await retrySetUp(fixture, withStore, policy);
  const file = t.write('november.csv', [
    HEADER,
    ...Array.from({ length: 10 }, (_, i) => row(i + 1)),
  ]);
  return { ...t, file };
}

describe.each(STORES)('a month of retries (%s)', (store) => {
  const withStore = storeEnv(store, { migrated: true });

  it('pays each failed payout once, refuses every second payment, and ends at exit 0', async () => {
    const { svc, home, file, run, write } = await setUp(withStore);
    const first = await run(sendArgs(file));
    expect(first.code).toBe(4);
    const runId = runIdOf(first.stderr);

    // Retry two of the three; the third stays failed for now.
    const retry = write('retry.csv', [RETRY_HEADER, row(2, 'ROW-2-R1'), row(5, 'ROW-5-R1')]);
    expect((await run(sendArgs(retry))).code).toBe(0);

    // A second --failed-out writes only the payout no retry took on.
    const second = join(home.dir, 'second.csv');
    const shown = await run(['runs', 'show', runId, '--failed-out', second]);
    expect(shown.code).toBe(0);
    expect(readFileSync(second, 'utf8')).not.toMatch(/ROW-2|ROW-5/);
    expect(readFileSync(second, 'utf8')).toContain('ROW-9,,');
    expect(shown.stderr).toContain('2 retried and paid (as ROW-2-R1, ROW-5-R1), not written');

    // Every second payment is refused before anything is sent, each row named.
    const creates = svc.creates;
    const again = write('again.csv', [RETRY_HEADER, row(2, 'ROW-2-R2')]);
    const refusedAgain = await run(sendArgs(again));
    expect(refusedAgain.code).toBe(2);
    expect(refusedAgain.stderr).toMatch(
      /again\.csv line 2: new_reference_id "ROW-2-R2": retries reference_id "ROW-2", already retried as "ROW-2-R1" in run [0-9a-f]{16}, which succeeded/,
    );
    const column = write('column.csv', [
      RETRY_HEADER,
      ...Array.from({ length: 10 }, (_, i) => row(i + 1, `X-${i + 1}`)),
    ]);
    const wholeColumn = await run(sendArgs(column));
    expect(wholeColumn.code).toBe(2);
    expect(wholeColumn.stderr).toContain(
      `column.csv line 2: new_reference_id "X-1": retries reference_id "ROW-1", which was paid (run ${runId}`,
    );
    expect(wholeColumn.stderr).toContain('a new reference would pay it again');
    // A dry run refuses it alike.
    expect((await run(['send', column, '--dry-run'])).code).toBe(2);

    // A new reference another payout holds (same amount and recipient) would drop ROW-9.
    const december = write('december.csv', [HEADER, 'DEC-9,1.25,EUR,r9@example.com,December']);
    expect((await run(sendArgs(december))).code).toBe(0);
    const reuse = write('reuse.csv', [RETRY_HEADER, row(9, 'DEC-9')]);
    const reused = await run(sendArgs(reuse, '--json'));
    expect(reused.code).toBe(2);
    expect(reused.stderr).toContain(
      'reuse.csv line 2: new_reference_id "DEC-9": is already used at this service by another payout',
    );
    const twice = write('twice.csv', [RETRY_HEADER, row(9, 'ROW-9-A'), row(9, 'ROW-9-B')]);
    const twiceRun = await run(sendArgs(twice));
    expect(twiceRun.code).toBe(2);
    expect(twiceRun.stderr).toContain(
      'twice.csv line 3: new_reference_id "ROW-9-B": retries reference_id "ROW-9", as line 2 does: a payout is retried once',
    );
    // The same new reference twice in one file is a reference used twice.
    const same = write('same.csv', [RETRY_HEADER, row(9, 'ROW-9-A'), row(2, 'ROW-9-A')]);
    const sameRun = await run(sendArgs(same));
    expect(sameRun.code).toBe(2);
    expect(sameRun.stderr).toContain('same.csv line 3: reference_id "ROW-9-A"');
    expect(svc.creates).toBe(creates + 1);

    // The last retry, then the original file again: nothing to send, exit 0.
    const last = write('last.csv', [RETRY_HEADER, row(9, 'ROW-9-R1')]);
    expect((await run(sendArgs(last))).code).toBe(0);
    const sent = svc.creates;
    const resend = await run(sendArgs(file));
    expect(resend.code).toBe(0);
    expect(svc.creates).toBe(sent);
    expect(resend.stderr).toContain('retried: 3, paid as ROW-2-R1, ROW-5-R1, ROW-9-R1');
    expect(resend.stdout).not.toContain('needs a new reference_id');
    const dry = await run(['send', file, '--dry-run']);
    expect(dry.stderr).toMatch(/Retried: +3, paid as ROW-2-R1, ROW-5-R1, ROW-9-R1/);

    // runs show and status tell the chain: the state one word, the retry in its own column.
    const table = await run(['runs', 'show', runId]);
    expect(table.stdout).toMatch(/^ROW-2\t.*\tfailed\t.*\tROW-2-R1$/m);
    expect(table.stderr).toContain('10 succeeded (3 paid by a retry)');
    const shownJson = JSON.parse((await run(['runs', 'show', runId, '--json'])).stdout);
    expect(shownJson.counts).toMatchObject({ success: 10, failed: 0, paid_by_retry: 3 });
    expect(shownJson.payouts[1]).toMatchObject({
      reference_id: 'ROW-2',
      status: 'failed',
      retried: { reference_id: 'ROW-2-R1', status: 'success' },
      paid_by_retry: true,
    });
    const third = await run(['runs', 'show', runId, '--failed-out', second]);
    expect(third.stderr).toContain(`No payout of run ${runId} is left to retry`);
    // status counts a payout its retry paid as paid (exit 0), on the service's word on the retry.
    const status = await run(['status', 'ROW-2']);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/Status +failed/);
    expect(status.stdout).toMatch(/Reason +Account closed/);
    expect(status.stdout).toMatch(
      /Retried as +ROW-2-R1 in run [0-9a-f]{16}: success at the service \(the payout is paid by it\)/,
    );
    const json = await run(['status', 'ROW-2', 'ROW-3', '--json']);
    expect(json.code).toBe(0);
    const doc = JSON.parse(json.stdout);
    expect(doc).toMatchObject({ success_count: 2, paid_by_retry_count: 1, failed_count: 0 });
    expect(doc.results[0]).toMatchObject({
      status: 'failed',
      retried_as: { reference_id: 'ROW-2-R1', run_id: expect.any(String), status: 'success' },
      paid_by_retry: true,
    });
    expect(doc.results[0].history).toEqual({
      held: true,
      reason: 'Account closed',
      retried: { reference_id: 'ROW-2-R1', run_id: expect.any(String), status: 'success' },
    });
    expect(doc.results[1].history).toBeUndefined();
    expect(doc.results[1]).toMatchObject({ retried_as: null, paid_by_retry: false });
    const fromReport = await run(['status', '--from', file]);
    expect(fromReport.code).toBe(0);
    expect(fromReport.stdout).toMatch(/^ROW-9\tfailed\t.*\tROW-9-R1$/m);

    expect(svc.appliedTwice()).toEqual([]);
    expect([...svc.held.values()].filter((h) => h.status === 'success')).toHaveLength(11);
  });

  it('follows a chain past a retry that failed, and refuses a retry of one that is pending', async () => {
    // ROW-2's first retry fails too; ROW-5's is held pending by the service.
    const failing = failsThese(new Set(['ROW-2', 'ROW-5', 'ROW-9', 'ROW-2-R1']));
    const policy = holdsPending(new Set(['ROW-5-R1']), failing);
    const { svc, home, file, run, write } = await setUp(withStore, policy);
    const runId = runIdOf((await run(sendArgs(file))).stderr);
    const first = write('first.csv', [RETRY_HEADER, row(2, 'ROW-2-R1'), row(5, 'ROW-5-R1')]);
    const retried = await run(sendArgs(first));
    expect(retried.code).toBe(4);
    const retryRun = runIdOf(retried.stderr);

    const again = write('again.csv', [RETRY_HEADER, row(2, 'ROW-2-R2'), row(5, 'ROW-5-R2')]);
    const refused = await run(sendArgs(again));
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      `again.csv line 2: new_reference_id "ROW-2-R2": retries reference_id "ROW-2", already retried as "ROW-2-R1" in run ${retryRun}, which failed too: retry "ROW-2-R1", not the original`,
    );
    expect(refused.stderr).toContain(
      `again.csv line 3: new_reference_id "ROW-5-R2": retries reference_id "ROW-5", already retried as "ROW-5-R1" in run ${retryRun}, which is pending at the service`,
    );
    const out = join(home.dir, 'left.csv');
    const left = await run(['runs', 'show', runId, '--failed-out', out]);
    expect(left.stderr).toContain('1 retried and failed again (as ROW-2-R1)');
    expect(left.stderr).toContain('1 retried and pending (as ROW-5-R1)');
    expect(readFileSync(out, 'utf8')).toContain('ROW-9,,');
    expect(readFileSync(out, 'utf8')).not.toMatch(/ROW-[25],/);

    // The retry is retried from its own run; the chain then ends paid, two links on.
    const second = write('second.csv', [
      RETRY_HEADER,
      'ROW-2-R1,ROW-2-R2,1.25,EUR,r2@example.com,x',
    ]);
    expect((await run(sendArgs(second))).code).toBe(0);
    const status = await run(['status', 'ROW-2']);
    expect(status.stdout).toMatch(/Retried as +ROW-2-R2 in run [0-9a-f]{16}: success/);
    const resend = await run(sendArgs(file));
    expect(resend.stderr).toContain('retried: 2, paid as ROW-2-R2; pending as ROW-5-R1');
    // ROW-9 is still failed, and ROW-5's retry is pending: exit 4 for ROW-9.
    expect(resend.code).toBe(4);
    expect(svc.appliedTwice()).toEqual([]);
  });

  it('refuses a new reference on a payout in doubt, and one the file also pays itself', async () => {
    // ROW-3's connection is cut and no lookup answers: its outcome is not known.
    const cut: CreatePolicy = (_n, posted) =>
      posted[0]?.reference_id === 'ROW-3' ? { cut: true } : {};
    const { svc, file, run, write } = await setUp(withStore, cut);
    svc.onGet = (ref, res) => {
      if (ref !== 'ROW-3') return false;
      sendJson(res, 503, { success: false, message: ['Down'], data: [] });
      return true;
    };
    const first = await run(sendArgs(file));
    expect(first.code).toBe(7);
    const creates = svc.creates;
    const retry = write('doubt.csv', [RETRY_HEADER, row(3, 'ROW-3-R1')]);
    const refused = await run(sendArgs(retry));
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      'doubt.csv line 2: new_reference_id "ROW-3-R1": retries reference_id "ROW-3", which may have been sent',
    );
    expect(refused.stderr).toContain(
      'read it back first: `payouts send` of the original file does',
    );
    const both = write('both.csv', [HEADER, 'NEW-1,1.00,EUR,a@example.com,x']);
    writeFileSync(
      both,
      `${RETRY_HEADER}\nNEW-1,,1.00,EUR,a@example.com,x\nNEW-1,NEW-1-R1,1.00,EUR,a@example.com,x\n`,
    );
    const paysBoth = await run(sendArgs(both));
    expect(paysBoth.code).toBe(2);
    expect(paysBoth.stderr).toContain('both would be paid');
    expect(svc.creates).toBe(creates);
    expect(svc.appliedTwice()).toEqual([]);
  });
});

describe('what a send and status tell of failed, canceled and mistyped payouts', () => {
  /** Fails ROW-2 and ROW-5 and cancels ROW-7 and ROW-9 ("Account closed" / "Canceled by bank"). */
  const failAndCancel: CreatePolicy = (n, posted, svc) => {
    const ref = posted[0]?.reference_id ?? '';
    const status = ['ROW-2', 'ROW-5'].includes(ref)
      ? 'failed'
      : ['ROW-7', 'ROW-9'].includes(ref)
        ? 'canceled'
        : undefined;
    if (!status) return {};
    const reply = failsThese(new Set([ref]))(n, posted, svc);
    const body = reply.body as (results: Array<Record<string, unknown>>) => {
      data: { results: Array<Record<string, unknown>> };
    };
    return {
      heldAs: status,
      body: (results) => {
        const doc = body(results);
        for (const r of doc.data.results) {
          r.status = status;
          if (status === 'canceled') r.message = 'Canceled by bank';
        }
        return doc;
      },
    };
  };

  it('counts canceled apart from failed, in the words and order of status, and status gives the reason', async () => {
    const { file, run } = await setUp((e) => e, failAndCancel);
    const sent = await run(sendArgs(file));
    expect(sent.code).toBe(4);
    expect(sent.stderr).toMatch(/10 payouts: 6 succeeded, 2 failed, 2 canceled, 0 pending/);
    const doc = JSON.parse((await run(sendArgs(file, '--json'))).stdout);
    expect([doc.failed_count, doc.canceled_count]).toEqual([4, 2]);
    const status = await run(['status', 'ROW-7']);
    expect(status.stdout).toMatch(/Status +canceled/);
    expect(status.stdout).toMatch(/Reason +Canceled by bank/);
  });

  it('"did you mean" puts the same reference in another case first, naming its run once; one edit or a case change, not both', async () => {
    const { home, run } = await setUp(
      (e) => e,
      () => ({}),
    );
    const file = join(home.dir, 'nov.csv');
    const refs = ['NOV-0007', 'NOV-0017', 'NOV-0027', 'NOV-0047', 'nov-00471'];
    writeFileSync(
      file,
      `${HEADER}\n${refs.map((r) => `${r},1.00,EUR,a@example.com,x`).join('\n')}\n`,
    );
    const runId = runIdOf((await run(sendArgs(file))).stderr);
    const r = await run(['status', 'nov-0047']);
    expect(r.code).toBe(6);
    const line = r.stdout.split('\n').find((l) => l.includes('did you mean')) ?? '';
    expect(line).toMatch(
      new RegExp(`did you mean NOV-0047 or nov-00471 \\(sent by run ${runId} on [^)]*\\)\\?$`),
    );
    expect(line.split(`run ${runId}`)).toHaveLength(2);
  });

  it('refuses a new_reference_id that differs from the reference it retries only by what cannot be seen', async () => {
    const { svc, file, run, write } = await setUp((e) => e);
    await run(sendArgs(file));
    const creates = svc.creates;
    const hidden = write('hidden.csv', [RETRY_HEADER, row(2, 'ROW-2\u200b')]);
    const r = await run(sendArgs(hidden));
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      'hidden.csv line 2: new_reference_id "ROW-2\\u200b": looks the same as the reference_id "ROW-2" it retries',
    );
    expect(svc.creates).toBe(creates);
  });
});
