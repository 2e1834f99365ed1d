import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sendJson } from '../helpers/http-servers.js';
import { failsThese, type LedgerService, ledgerPerTest } from '../helpers/ledger-service.js';
import { FakeClock, runMain } from '../helpers/main.js';
import { STORES, storeEnv } from '../helpers/pg.js';

// Issue 35: a failed payout's retry in one step. `runs show --failed-out` writes the failed
// rows of a finished run with a new_reference_id column; the unchanged file is refused; the
// file with new references is sent, and no payout is applied twice.

const fixture = ledgerPerTest();

/** The references the service fails: their create results say failed, and it holds them so. */
const FAILING = new Set(['ROW-2', 'ROW-5', 'ROW-9']);

const failSome = failsThese(FAILING);

/** A service failing FAILING, a file of ten payouts, and a runner in a private home. */
async function setUp(
  withStore: (env: Record<string, string>) => Record<string, string> = (e) => e,
) {
  const svc = await fixture.start(failSome);
  const home = fixture.home();
  const file = join(home.dir, 'november.csv');
  const rows = Array.from(
    { length: 10 },
    (_, i) => `ROW-${i + 1},1.25,EUR,r${i + 1}@example.com,November ${i + 1}`,
  );
  writeFileSync(file, `reference_id,amount,currency,recipient,description\n${rows.join('\n')}\n`);
  const env = withStore(svc.env(home.env));
  const run = (args: string[]) => runMain(args, { env, clock: new FakeClock() });
  return { svc, home, file, run };
}

/** The run id the last line of a send names. */
function runIdOf(stderr: string): string {
  const id = /Run ([0-9a-f]{16}): payouts runs show/.exec(stderr)?.[1];
  expect(id).toBeDefined();
  return id as string;
}

/** Sends `file` one payout a request. */
function sendArgs(file: string, ...more: string[]): string[] {
  return ['send', file, '--yes', '--chunk-size', '1', '--concurrency', '1', ...more];
}

/** Asserts that no reference was applied twice. */
function expectOnce(svc: LedgerService): void {
  expect([...svc.held.values()].filter((h) => h.times > 1)).toEqual([]);
  expect(svc.appliedTwice()).toEqual([]);
}

describe('a retry of failed payouts in one step', () => {
  it('runs show --failed-out writes the failed rows with a new_reference_id column, sending nothing', async () => {
    const { svc, home, file, run } = await setUp();
    const first = await run(sendArgs(file));
    expect(first.code).toBe(4);
    const runId = runIdOf(first.stderr);
    expect(first.stderr).toContain(
      `3 payouts failed or were canceled: a failed payout needs a new reference_id; \`payouts runs show ${runId} --failed-out FILE\``,
    );
    const creates = svc.creates;
    const out = join(home.dir, 'retry.csv');
    const shown = await run(['runs', 'show', runId.slice(0, 6), '--failed-out', out]);
    expect(shown.code).toBe(0);
    expect(svc.creates).toBe(creates);
    expect(readFileSync(out, 'utf8')).toBe(
      '\ufeffreference_id,new_reference_id,amount,currency,recipient,description\r\n' +
        'ROW-2,,1.25,EUR,r2@example.com,November 2\r\n' +
        'ROW-5,,1.25,EUR,r5@example.com,November 5\r\n' +
        'ROW-9,,1.25,EUR,r9@example.com,November 9\r\n',
    );
    expect(shown.stderr).toContain(
      `3 failed or canceled payouts of run ${runId} written to ${out} (","-separated, decimal point, UTF-8 with a byte-order mark): give each row a new reference_id in its new_reference_id column, then \`payouts send ${out}\``,
    );
    const json = await run(['runs', 'show', runId, '--failed-out', out, '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({
      run_id: runId,
      failed_out: { file: out, payout_count: 3 },
    });
  });

  it('a run of the same file again tells failed payouts as failed, never "sent earlier"', async () => {
    const { file, run } = await setUp();
    await run(sendArgs(file));
    const again = await run(sendArgs(file));
    expect(again.stderr).toContain(
      'sent all 10 payouts; 3 of them failed at the service, and a failed payout needs a new reference_id',
    );
    expect(again.stdout).toMatch(/ROW-2\tfailed \(earlier: needs a new reference_id\)\t/);
    expect(again.stdout).not.toMatch(/failed \(sent earlier/);
  });

  it('refuses a reference --check-service finds failed at the service, from a folder with no history', async () => {
    const { svc, file, run } = await setUp();
    svc.preload(
      { reference_id: 'ROW-5', amount: 1.25, currency: 'EUR', recipient: 'r5@example.com' },
      'failed',
    );
    const r = await run(sendArgs(file, '--check-service'));
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      'november.csv line 6: reference_id "ROW-5": already failed at the service (found so by --check-service): give this row a new reference_id',
    );
    expect(svc.creates).toBe(0);
  });

  it('checks the credentials when there is nothing to send: a rejected secret exits 3', async () => {
    const { svc, file, run } = await setUp();
    await run(sendArgs(file));
    const gets = svc.gets;
    svc.onGet = (_ref, res) => {
      sendJson(res, 401, { success: false, message: ['Unauthenticated.'], data: [] });
      return true;
    };
    const again = await run(sendArgs(file));
    expect(again.code).toBe(3);
    expect(svc.gets).toBe(gets + 1);
  });
});

describe.each(STORES)('a retry file sent again (%s)', (store) => {
  const withStore = storeEnv(store, { migrated: true });

  it('refuses the unchanged file (exit 2), naming each reference that failed; sends the filled-in one once', async () => {
    expect(withStore.url() !== undefined).toBe(store === 'postgres');
    const { svc, home, file, run } = await setUp(withStore);
    const runId = runIdOf((await run(sendArgs(file))).stderr);
    const out = join(home.dir, 'retry.csv');
    await run(['runs', 'show', runId, '--failed-out', out, '--report-encoding', 'utf8']);
    const creates = svc.creates;

    const unchanged = await run(sendArgs(out));
    expect(unchanged.code).toBe(2);
    expect(svc.creates).toBe(creates);
    expect(unchanged.stderr).toContain(
      `these 3 references already failed at the service: give them new reference_ids in the new_reference_id column of ${out}, or have \`payouts runs show ${runId} --failed-out FILE --new-references -R1\` write a file with them filled in (each reference_id with -R1 added); nothing was sent`,
    );
    expect(unchanged.stderr).toMatch(
      new RegExp(
        `retry\\.csv line 2: reference_id "ROW-2": already failed at the service \\(sent by run ${runId} on .*\\): fill in its new_reference_id`,
      ),
    );
    expect(unchanged.stderr).not.toContain('sent earlier');
    // A dry run tells them as failed earlier, never as sent earlier.
    const dry = await run(['send', out, '--dry-run']);
    expect(dry.stderr).toMatch(
      /Failed earlier: +EUR 3\.75 +\(3 payouts; each needs a new reference_id\)/,
    );
    expect(dry.stderr).not.toContain('Sent earlier');

    // Two rows given new references: the third, left empty, is still refused.
    const text = readFileSync(out, 'utf8');
    writeFileSync(
      out,
      text.replace('ROW-2,,', 'ROW-2,ROW-2b,').replace('ROW-5,,', 'ROW-5,ROW-5b,'),
    );
    const partly = await run(sendArgs(out));
    expect(partly.code).toBe(2);
    expect(partly.stderr).toContain('this reference already failed at the service');
    expect(svc.creates).toBe(creates);

    writeFileSync(out, readFileSync(out, 'utf8').replace('ROW-9,,', 'ROW-9,ROW-9b,'));
    const sent = await run(sendArgs(out, '--json'));
    expect(sent.code).toBe(0);
    // The summary shows the new references, for a person to check before confirming.
    expect(sent.stderr).toMatch(
      /New refs: +3 rows under their new_reference_id: ROW-2 -> ROW-2b, ROW-5 -> ROW-5b, ROW-9 -> ROW-9b/,
    );
    expect(sent.stderr).not.toMatch(/ignoring column/);
    const doc = JSON.parse(sent.stdout) as { results: Array<{ reference_id: string }> };
    expect(doc.results.map((r) => r.reference_id)).toEqual(['ROW-2b', 'ROW-5b', 'ROW-9b']);
    expect(svc.held.get('ROW-9b')?.status).toBe('success');
    expectOnce(svc);
  });

  it('--new-references derives the new references, shows them, and checks them against the history', async () => {
    const { svc, home, file, run } = await setUp(withStore);
    const runId = runIdOf((await run(sendArgs(file))).stderr);
    const out = join(home.dir, 'retry.csv');
    const retryFile = () =>
      run(['runs', 'show', runId, '--failed-out', out, '--new-references', '-retry1']);
    const shown = await retryFile();
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/ROW-2\s+ROW-2-retry1\s+failed/);
    expect(shown.stderr).toContain('each under the new reference_id shown above: check them');
    const sent = await run(sendArgs(out));
    expect(sent.code).toBe(0);
    expect(
      ['ROW-2-retry1', 'ROW-5-retry1', 'ROW-9-retry1'].map((r) => svc.held.get(r)?.times),
    ).toEqual([1, 1, 1]);
    // A payout a retry paid is not written again (issue 38).
    const again = await retryFile();
    expect(again.code).toBe(0);
    expect(again.stderr).toContain(
      '3 retried and paid (as ROW-2-retry1, ROW-5-retry1, ROW-9-retry1), not written',
    );
    expect(readFileSync(out, 'utf8')).not.toContain('ROW-');
    expectOnce(svc);
  });

  it('--new-references refuses a suffix that makes a reference the history already holds', async () => {
    const { home, file, run } = await setUp(withStore);
    const runId = runIdOf((await run(sendArgs(file))).stderr);
    const taken = join(home.dir, 'taken.csv');
    writeFileSync(
      taken,
      'reference_id,amount,currency,recipient\nROW-5-x,2.00,EUR,x@example.com\n',
    );
    expect((await run(sendArgs(taken))).code).toBe(0);
    const out = join(home.dir, 'retry.csv');
    const refused = await run([
      'runs',
      'show',
      runId,
      '--failed-out',
      out,
      '--new-references',
      '-x',
    ]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('1 of the new references are already used at this service');
  });
});
