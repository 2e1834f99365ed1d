import { hostname, userInfo } from 'node:os';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { visibleWidth } from '../../src/output/table.js';
import { fixture } from '../helpers/cli.js';
import { type LedgerService, ledgerPerTest } from '../helpers/ledger-service.js';
import { clockStoppedAtLongWait, runsOnFakeClock } from '../helpers/main.js';
import { testService } from '../helpers/sandbox.js';

// Issue 27: every table fits the terminal it is shown on, identifiers whole; on a pipe each
// is a header and tab-separated rows. And `payouts runs` tells the truth about each run.

let service: Awaited<ReturnType<typeof testService>> | undefined;
let runs: Awaited<ReturnType<typeof twoRuns>>;
// One service and its two runs for the tables; each test reads them.
beforeAll(async () => {
  runs = await twoRuns();
});
afterAll(async () => {
  await service?.close();
  service = undefined;
});

const run = runsOnFakeClock();

/** The lines of a text, colours removed. */
const linesOf = (text: string) => text.replace(/\u001b\[[0-9;]*m/g, '').split('\n');

/**
 * Asserts no line of a table is wider than `columns` and every identifier is on the screen
 * whole. Send's closing line and the head of runs show are sentences, which may wrap.
 */
function fits(text: string, columns: number, ids: string[]): void {
  const prose = /^(SANDBOX )?\d+ payouts?: |^Run \w+: |^Created /;
  const table = linesOf(text).filter((l) => !prose.test(l));
  for (const line of table) expect(visibleWidth(line), line).toBeLessThanOrEqual(columns);
  for (const id of ids) expect(text, id).toContain(id);
}

/** Rows of a tab-separated text: the header first; every row as wide as the header. */
function tsv(text: string): string[][] {
  const rows = text
    .replace(/\n+$/, '')
    .split('\n')
    .map((l) => l.split('\t'));
  for (const row of rows) expect(row).toHaveLength(rows[0]!.length);
  expect(text).not.toMatch(/[│┌└─]|\u001b/);
  return rows;
}

/** The sent-earlier part of triggers.csv, then the whole file, as two runs. */
async function twoRuns(): Promise<{
  file: string;
  refs: string[];
  txns: string[];
  /** Transaction ids of the payouts the second run sent itself. */
  ownTxns: string[];
}> {
  service = await testService();
  const file = fixture('send', 'triggers.csv');
  const first = join(service.home.dir, 'first.csv');
  writeFileSync(
    first,
    'reference_id,amount,currency,recipient\nTR-OK-1,100.00,USD,ok@example.com\n',
  );
  expect((await run(['send', first, '--yes'], { env: service.env })).code).toBe(0);
  const r = await run(['send', file, '--yes', '--json'], { env: service.env });
  const doc = JSON.parse(r.stdout) as {
    results: Array<{ reference_id: string; transaction_id: string | null; sent_earlier?: boolean }>;
  };
  const txns = (own: boolean) =>
    doc.results.flatMap((x) =>
      x.transaction_id && (!own || !x.sent_earlier) ? [x.transaction_id] : [],
    );
  return {
    file,
    refs: doc.results.map((x) => x.reference_id),
    txns: txns(false),
    ownTxns: txns(true),
  };
}

describe.each([70, 100])('tables on a %i-column terminal', (columns) => {
  const terminal = { columns };
  // NO_COLOR keeps the spinner off this fake terminal (the end-to-end test has it on).

  it('send, status, runs and runs show fit, identifiers whole', async () => {
    const { file, refs, txns, ownTxns } = runs;
    const env = { ...service!.env, NO_COLOR: '1' };
    const sent = await run(['send', file, '--yes'], { env, terminal });
    fits(sent.stdout, columns, [...refs, ...txns]);
    expect(sent.stdout).toContain('Sandbox trigger:');

    const status = await run(['status', ...refs], { env, terminal });
    fits(status.stdout, columns, [...refs, ...txns]);

    const list = await run(['runs'], { env, terminal });
    const ids = (
      JSON.parse((await run(['runs', '--json'], { env })).stdout) as {
        runs: Array<{ run_id: string }>;
      }
    ).runs.map((x) => x.run_id);
    expect(ids).toHaveLength(2);
    fits(list.stdout, columns, ids);
    expect(list.stdout).toMatch(/\d{4}-\d\d-\d\d \d\d:\d\d/);
    expect(list.stdout).not.toMatch(/T\d\d:\d\d:\d\d/);

    const show = await run(['runs', 'show', ids[0]!], { env, terminal });
    expect(ownTxns).toHaveLength(3);
    fits(show.stdout, columns, [...refs, ...ownTxns]);
    expect(show.stdout).toContain('USD 20.00');
  });
});

describe('tables on a pipe', () => {
  it('are a header and tab-separated rows: send, status and runs', async () => {
    const { file, refs } = runs;
    const env = service!.env;
    const sent = tsv((await run(['send', file, '--yes'], { env })).stdout);
    expect(sent[0]).toEqual([
      'reference_id',
      'status',
      'amount',
      'charges',
      'transaction_id',
      'message',
      'retried_as',
    ]);
    expect(
      sent
        .map((r) => r[0])
        .slice(1)
        .sort(),
    ).toEqual([...refs].sort());

    const status = tsv((await run(['status', ...refs], { env })).stdout);
    expect(status[0]).toEqual([
      'Reference ID',
      'Status',
      'Amount',
      'Recipient',
      'Transaction ID',
      'Updated at (UTC)',
      'Retried as',
    ]);
    expect(status).toHaveLength(refs.length + 1);
    expect(status[1]![5]).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d$/);

    const list = tsv((await run(['runs'], { env })).stdout);
    expect(list[0]).toEqual([
      'run',
      'last activity (UTC)',
      'sent by',
      'service',
      'inputs',
      'payouts',
      'states',
    ]);
    expect(list).toHaveLength(3);
    // Each run names who sent it, as user@host.
    expect(list[1]![2]).toBe(`${userInfo().username}@${hostname()}`);
  });
});

describe('payouts runs tells the truth', () => {
  it('counts payouts sent earlier as such, newest run first, with amounts in runs show', async () => {
    const env = service!.env;
    const list = (
      JSON.parse((await run(['runs', '--json'], { env })).stdout) as {
        runs: Array<{
          run_id: string;
          inputs: string[];
          payout_count: number;
          counts: Record<string, number>;
          finish_command: string | null;
        }>;
      }
    ).runs;
    // The whole file's run came last: it is first, and its one payout sent earlier is no
    // payout "not sent".
    expect(list[0]!.inputs[0]).toMatch(/triggers\.csv$/);
    expect(list[0]!.counts).toMatchObject({ sent_earlier: 1, not_sent: 0 });
    expect(list[0]!.finish_command).toBeNull();
    const text = (await run(['runs'], { env })).stdout;
    expect(text).toContain('1 sent earlier');
    expect(text).not.toContain('not sent');
    const show = tsv((await run(['runs', 'show', list[0]!.run_id], { env })).stdout);
    expect(show[0]).toEqual([
      'reference_id',
      'amount',
      'state',
      'transaction_id',
      'message',
      'retried_as',
    ]);
    expect(show).toContainEqual(['TR-OK-1', 'USD 100.00', 'sent earlier', '', '', '']);
    expect(show).toContainEqual(expect.arrayContaining(['TR-CANC-1', 'GBP 40.00', 'canceled']));
  });

  it('shows a run that had nothing to send with its payouts sent earlier, none "not sent"', async () => {
    const env = service!.env;
    // Other bytes, the same payout: a run of its own, all of it sent earlier.
    const again = join(service!.home.dir, 'again.csv');
    writeFileSync(
      again,
      'reference_id,amount,currency,recipient\r\nTR-OK-1,100.00,USD,ok@example.com\r\n',
    );
    expect((await run(['send', again, '--yes'], { env })).code).toBe(0);
    const [latest] = (
      JSON.parse((await run(['runs', '--json'], { env })).stdout) as {
        runs: Array<{ inputs: string[]; counts: Record<string, number> }>;
      }
    ).runs;
    expect(latest!.inputs[0]).toMatch(/again\.csv$/);
    expect(latest!.counts).toMatchObject({ success: 0, sent_earlier: 1, not_sent: 0 });
  });
});

describe('payouts runs on a run left in flight', () => {
  let svc: LedgerService | undefined;
  const ledger = ledgerPerTest();

  it('says which command finishes it', async () => {
    // The third request is cut without an answer and Ctrl-C comes during the wait for its
    // read-back: its payouts stay in flight, the rest not sent.
    svc = await ledger.start((n) => (n === 3 ? { apply: 'none', cut: true } : {}));
    const home = ledger.home();
    const file = join(home.dir, 'run.csv');
    const rows = Array.from({ length: 10 }, (_, i) => `FL-${i + 1},1.25,EUR,r${i + 1}@example.com`);
    writeFileSync(file, `reference_id,amount,currency,recipient\n${rows.join('\n')}\n`);
    const env = { ...svc.env(home.env), PAYOUTS_TIMEOUT: '2' };
    const { clock, stop } = clockStoppedAtLongWait();
    const args = ['send', file, '--yes', '--chunk-size', '2', '--concurrency', '1'];
    expect((await run(args, { env, clock, interrupt: stop.signal })).code).toBe(130);
    const listed = await run(['runs'], { env });
    const [summary] = (
      JSON.parse((await run(['runs', '--json'], { env })).stdout) as {
        runs: Array<{ run_id: string; counts: { in_flight: number }; finish_command: string }>;
      }
    ).runs;
    expect(summary!.counts.in_flight).toBe(2);
    expect(summary!.finish_command).toBe(`payouts send ${file} --base-url ${svc.url}`);
    // The fourth request may have gone out while the third waited aside (issue 33).
    const notSent = 8 - svc.held.size;
    expect(listed.stderr).toContain(
      `run ${summary!.run_id} has payouts 2 in flight, ${notSent} not sent`,
    );
    expect(listed.stderr).toContain(`\`payouts send ${file} --base-url ${svc.url}\``);
  });

  it('repeats the flags its file was read with, and the command finishes it (issue 49)', async () => {
    svc = await ledger.start((n) => (n === 3 ? { apply: 'none', cut: true } : {}));
    const home = ledger.home();
    const file = join(home.dir, 'dez.csv');
    const rows = Array.from({ length: 10 }, (_, i) => `FD-${i + 1};1,25;EUR;r${i + 1}@example.com`);
    writeFileSync(file, `Referenz;Betrag;currency;recipient\n${rows.join('\n')}\n`);
    const flags = ['--decimal-comma', '--map', 'reference_id=Referenz,amount=Betrag'];
    const env = { ...svc.env(home.env), PAYOUTS_TIMEOUT: '2' };
    const { clock, stop } = clockStoppedAtLongWait();
    const args = ['send', file, ...flags, '--yes', '--chunk-size', '2', '--concurrency', '1'];
    expect((await run(args, { env, clock, interrupt: stop.signal })).code).toBe(130);
    const [summary] = (
      JSON.parse((await run(['runs', '--json'], { env })).stdout) as {
        runs: Array<{ finish_command: string }>;
      }
    ).runs;
    const command = `payouts send ${file} ${flags.join(' ')} --base-url ${svc.url}`;
    expect(summary!.finish_command).toBe(command);
    const finished = await run([...command.split(' ').slice(1), '--yes'], { env });
    expect(finished.code, finished.stderr).toBe(0);
    expect(svc.held.size).toBe(10);
    expect(svc.appliedTwice()).toEqual([]);
  });
});
