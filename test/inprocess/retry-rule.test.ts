import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sendJson } from '../helpers/http-servers.js';
import { failsThese, holdsPending, ledgerPerTest } from '../helpers/ledger-service.js';
import { STORES, storeEnv } from '../helpers/pg.js';
import { HEADER, RETRY_HEADER, retrySetUp, row, runIdOf, sendArgs } from '../helpers/retry.js';

// Issue 47 item 3: one rule for a failed payout that its retry paid. It counts as paid in
// status (on the service's word on the retry), with its own status kept and the retry in a
// column of its own: a script alerting on exit 4, or reading the status column with cut -f2,
// no longer pages someone for a salary that was paid.

const fixture = ledgerPerTest();

/** ROW-1 to ROW-4 sent, ROW-2 and ROW-3 failed; ROW-2 then retried and paid as ROW-2-R1. */
async function retriedMonth(withStore: (env: Record<string, string>) => Record<string, string>) {
  const t = await retrySetUp(fixture, withStore, failsThese(new Set(['ROW-2', 'ROW-3'])));
  const file = t.write('november.csv', [HEADER, row(1), row(2), row(3), row(4)]);
  const first = await t.run(sendArgs(file));
  expect(first.code).toBe(4);
  const retry = t.write('retry.csv', [RETRY_HEADER, row(2, 'ROW-2-R1')]);
  const retried = await t.run(sendArgs(retry));
  expect(retried.code).toBe(0);
  return { ...t, file, runId: runIdOf(first.stderr), retryRun: runIdOf(retried.stderr) };
}

/** The cells of the line of `ref` in a table printed on a pipe, by its header's names. */
function pipeRow(stdout: string, ref: string): Record<string, string> {
  const [head, ...lines] = stdout.trimEnd().split('\n');
  const names = (head ?? '').split('\t');
  const cells = (lines.find((l) => l.split('\t')[0] === ref) ?? '').split('\t');
  return Object.fromEntries(names.map((n, i) => [n, cells[i] ?? '']));
}

describe.each(STORES)('status of a failed payout its retry paid (%s)', (store) => {
  const withStore = storeEnv(store, { migrated: true });

  it('counts it paid: exit 0, its status one word, the retry in a column of its own', async () => {
    const { run, retryRun } = await retriedMonth(withStore);
    const one = await run(['status', 'ROW-2']);
    expect(one.code).toBe(0);
    expect(one.stdout).toMatch(/^Status +failed$/m);
    expect(one.stdout).toContain(
      `Retried as      ROW-2-R1 in run ${retryRun}: success at the service (the payout is paid by it)`,
    );

    // On a pipe: the status column keeps the service's one word; `cut -f2` reads "failed".
    const table = await run(['status', 'ROW-1', 'ROW-2', 'ROW-3']);
    expect(table.code).toBe(4);
    expect(table.stdout.split('\n')[0]).toBe(
      'Reference ID\tStatus\tAmount\tRecipient\tTransaction ID\tUpdated at (UTC)\tRetried as',
    );
    expect(pipeRow(table.stdout, 'ROW-2')).toMatchObject({
      Status: 'failed',
      'Retried as': 'ROW-2-R1',
    });
    expect(pipeRow(table.stdout, 'ROW-3')).toMatchObject({ Status: 'failed', 'Retried as': '' });
    // ROW-3 needs attention and comes first; ROW-2 is paid, among the successes.
    expect(table.stdout.split('\n')[1]).toMatch(/^ROW-3\t/);
    expect(table.stderr).toContain(
      '3 payouts: 2 succeeded (1 paid by a retry), 1 failed, 0 canceled, 0 pending, 0 not found',
    );

    const doc = JSON.parse((await run(['status', 'ROW-2', 'ROW-3', '--json'])).stdout);
    expect(doc).toMatchObject({
      exit_code: 4,
      success_count: 1,
      paid_by_retry_count: 1,
      failed_count: 1,
    });
    expect(doc.results[0]).toMatchObject({
      status: 'failed',
      retried_as: { reference_id: 'ROW-2-R1', run_id: retryRun, status: 'success' },
      paid_by_retry: true,
      history: { held: true },
    });
    expect(doc.results[1]).toMatchObject({
      status: 'failed',
      retried_as: null,
      paid_by_retry: false,
      history: { held: true, retried: null },
    });
  });

  it('runs and runs show count it paid, its state one word and the retry in a column', async () => {
    const { run, runId, retryRun } = await retriedMonth(withStore);
    const list = JSON.parse((await run(['runs', '--json'])).stdout);
    const first = list.runs.find((r: { run_id: string }) => r.run_id === runId);
    expect(first.counts).toMatchObject({ success: 3, failed: 1, paid_by_retry: 1 });
    const text = await run(['runs']);
    expect(pipeRow(text.stdout, runId).states).toBe('3 succeeded (1 paid by a retry), 1 failed');

    const shown = await run(['runs', 'show', runId]);
    expect(pipeRow(shown.stdout, 'ROW-2')).toMatchObject({
      state: 'failed',
      message: 'Account closed',
      retried_as: 'ROW-2-R1',
    });
    expect(pipeRow(shown.stdout, 'ROW-3')).toMatchObject({ state: 'failed', retried_as: '' });
    expect(shown.stderr).toContain('3 succeeded (1 paid by a retry), 1 failed');
    const doc = JSON.parse((await run(['runs', 'show', runId, '--json'])).stdout);
    expect(doc.payouts[1]).toMatchObject({
      status: 'failed',
      retried: { reference_id: 'ROW-2-R1', run_id: retryRun, status: 'success' },
      paid_by_retry: true,
    });
    expect(doc.payouts[2]).toMatchObject({ retried: null, paid_by_retry: false });
  });

  it('takes the retry’s status from the service, not from the history', async () => {
    const { svc, run } = await retriedMonth(withStore);
    // The service now holds the retry as pending: the payout is pending as it (exit 5).
    svc.held.set('ROW-2-R1', { ...svc.held.get('ROW-2-R1')!, status: 'pending' });
    const pending = await run(['status', 'ROW-2']);
    expect(pending.code).toBe(5);
    expect(pending.stdout).toContain(': pending at the service (the payout is pending as it)');
    // It holds no such payout: the history's "success" for it turns nothing green (exit 4).
    svc.held.delete('ROW-2-R1');
    const gone = await run(['status', 'ROW-2', '--json']);
    expect(gone.code).toBe(4);
    expect(JSON.parse(gone.stdout).results[0]).toMatchObject({
      retried_as: { reference_id: 'ROW-2-R1', status: 'not_found' },
      paid_by_retry: false,
    });
    // It does not answer about the retry: the payout's state is not known (exit 7).
    svc.onGet = (ref, res) => {
      if (ref !== 'ROW-2-R1') return false;
      sendJson(res, 503, { success: false, message: ['Down'], data: [] });
      return true;
    };
    const down = await run(['status', 'ROW-2']);
    expect(down.code).toBe(7);
    expect(down.stdout).toMatch(/ROW-2-R1 in run [0-9a-f]{16}: could not be looked up/);
  });
});

describe('status of a failed payout this history never sent', () => {
  it('says that a retry of it sent from elsewhere cannot be seen here, and keeps exit 4', async () => {
    const { svc, env, run } = await retriedMonth((e) => e);
    // Another machine's empty state folder, the same service.
    const other = fixture.home();
    const there = svc.env(other.env);
    const alone = await run(['status', 'ROW-3'], there);
    expect(alone.code).toBe(4);
    expect(alone.stdout).toMatch(
      /^History +never sent from the history in .*state\.db: a retry of it sent from another machine or folder cannot be seen here \(one history for every machine: PAYOUTS_STATE_URL, docs\/shared-history\.md\)$/m,
    );
    const doc = JSON.parse((await run(['status', 'ROW-3', 'ROW-1', '--json'], there)).stdout);
    expect(doc.results[0]).toMatchObject({
      paid_by_retry: false,
      history: { held: false, reason: null, retried: null },
    });
    const table = await run(['status', 'ROW-3', 'ROW-1'], there);
    expect(table.stderr).toContain('1 failed payout (ROW-3) was never sent from the history in');
    // Where it was sent, the history knows it.
    const here = JSON.parse((await run(['status', 'ROW-3', '--json'], env)).stdout);
    expect(here.results[0].history.held).toBe(true);
  });
});

describe.each(STORES)('send of a file whose failed payout its retry paid (%s)', (store) => {
  const withStore = storeEnv(store, { migrated: true });

  it('counts it paid: exit 0, its own status kept, the retry named, never in --failed-out', async () => {
    const t = await retrySetUp(fixture, withStore, failsThese(new Set(['ROW-2'])));
    const file = t.write('november.csv', [HEADER, row(1), row(2), row(3)]);
    expect((await t.run(sendArgs(file))).code).toBe(4);
    const retry = t.write('retry.csv', [RETRY_HEADER, row(2, 'ROW-2-R1')]);
    const retried = await t.run(sendArgs(retry));
    const retryRun = runIdOf(retried.stderr);
    const creates = t.svc.creates;

    const report = join(t.home.dir, 'again.report.csv');
    const failedOut = join(t.home.dir, 'again.failed.csv');
    const again = await t.run(sendArgs(file, '--report', report, '--failed-out', failedOut));
    expect(again.code).toBe(0);
    expect(t.svc.creates).toBe(creates);
    expect(pipeRow(again.stdout, 'ROW-2')).toMatchObject({
      status: 'failed (earlier; paid by its retry)',
      retried_as: 'ROW-2-R1',
    });
    expect(pipeRow(again.stdout, 'ROW-1').retried_as).toBe('');
    expect(readFileSync(failedOut, 'utf8')).not.toContain('ROW-2');
    const lines = readFileSync(report, 'utf8')
      .replace(/^\ufeff/, '')
      .split('\r\n');
    expect(lines[0]).toMatch(/,sent_earlier,retried_as$/);
    expect(lines.find((l) => l.includes(',ROW-2,'))).toMatch(/,failed,.*,true,ROW-2-R1$/);

    const doc = JSON.parse((await t.run(sendArgs(file, '--json'))).stdout);
    expect(doc).toMatchObject({
      exit_code: 0,
      success_count: 3,
      paid_by_retry_count: 1,
      failed_count: 0,
    });
    expect(doc.results[1]).toMatchObject({
      reference_id: 'ROW-2',
      status: 'failed',
      sent_earlier: true,
      retried_as: { reference_id: 'ROW-2-R1', run_id: retryRun, status: 'success' },
      paid_by_retry: true,
    });
    expect(doc.results[0]).toMatchObject({ retried_as: null, paid_by_retry: false });
  });

  it('counts one whose retry is pending as pending (exit 5), and watches the retry', async () => {
    const policy = holdsPending(new Set(['ROW-2-R1']), failsThese(new Set(['ROW-2'])));
    const t = await retrySetUp(fixture, withStore, policy);
    const file = t.write('november.csv', [HEADER, row(1), row(2)]);
    await t.run(sendArgs(file));
    const retry = t.write('retry.csv', [RETRY_HEADER, row(2, 'ROW-2-R1')]);
    expect((await t.run(sendArgs(retry))).code).toBe(5);
    const again = await t.run(sendArgs(file, '--json'));
    expect(again.code).toBe(5);
    const doc = JSON.parse(again.stdout);
    expect(doc).toMatchObject({ pending_count: 1, failed_count: 0, paid_by_retry_count: 0 });
    expect(doc.results[1]).toMatchObject({
      status: 'failed',
      retried_as: { reference_id: 'ROW-2-R1', status: 'pending' },
      paid_by_retry: false,
    });
    expect(again.stderr).toContain('payouts status ROW-2-R1 --watch');
  });
});

describe.each(STORES)('a retry sent where its original’s history is not (%s)', (store) => {
  const withStore = storeEnv(store, { migrated: true });

  it('is refused (exit 2) naming the history; --original-elsewhere sends it, and says so', async () => {
    const t = await retrySetUp(fixture, withStore, failsThese(new Set(['ROW-2'])));
    // Another machine, with a state folder of its own, sent November.
    const there = { ...t.svc.env(fixture.home().env), PAYOUTS_STATE_URL: '' };
    const file = t.write('november.csv', [HEADER, row(1), row(2)]);
    expect((await t.run(sendArgs(file), there)).code).toBe(4);
    const retry = t.write('retry.csv', [RETRY_HEADER, row(2, 'ROW-2-R1')]);
    const [creates, gets] = [t.svc.creates, t.svc.gets];

    for (const args of [sendArgs(retry), ['send', retry, '--dry-run']]) {
      const refused = await t.run(args);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain(
        'retry.csv line 2: new_reference_id "ROW-2-R1": retries reference_id "ROW-2", which this history never sent',
      );
      const where =
        store === 'sqlite'
          ? /the history in \S*state\.db never sent/
          : /the shared history at postgres:\/\/\S* never sent/;
      expect(refused.stderr).toMatch(where);
      expect(refused.stderr).toContain('PAYOUTS_STATE_URL, docs/shared-history.md');
      expect(refused.stderr).toContain('pass --original-elsewhere');
    }
    const doc = JSON.parse((await t.run(sendArgs(retry, '--json'))).stdout);
    expect(doc).toMatchObject({ exit_code: 2, original_elsewhere: [] });
    expect(doc.error.type).toBe('OriginalElsewhereError');
    // Refused from the history alone: nothing asked, nothing sent.
    expect([t.svc.creates, t.svc.gets]).toEqual([creates, gets]);

    const dry = await t.run(['send', retry, '--dry-run', '--original-elsewhere']);
    expect(dry.code).toBe(0);
    expect(dry.stderr).toMatch(
      /Originals: +1 not in this history, sent with --original-elsewhere once the service says each failed: ROW-2 \(retried as ROW-2-R1\)/,
    );
    const sent = await t.run(sendArgs(retry, '--original-elsewhere', '--json'));
    expect(sent.code, sent.stderr).toBe(0);
    expect(JSON.parse(sent.stdout).original_elsewhere).toEqual([
      { reference_id: 'ROW-2-R1', retry_of: 'ROW-2' },
    ]);
    // Only on the service's word that the original failed: one lookup, one payout.
    expect(t.svc.gets - gets).toBe(1);
    expect(t.svc.posts.get('ROW-2-R1')).toBe(1);
    expect(t.svc.appliedTwice()).toEqual([]);
  });
});
