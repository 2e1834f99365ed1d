import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Chalk } from 'chalk';
import { afterEach, describe, expect, it } from 'vitest';
import { countOutcomes, type PayoutOutcome } from '../../../src/domain/outcome.js';
import { openScratchDb, RunOutcomes } from '../../../src/state/index.js';
import type { RunPlan } from '../../../src/core/send/plan.js';
import {
  closingLine,
  listRows,
  resultsHead,
  resultsTable,
  summarize,
} from '../../../src/core/send/render.js';
import { summaryText } from '../../../src/core/send/summary.js';
import { writeFailedOut } from '../../../src/core/send/report.js';
import { exitCodeForStatuses } from '../../../src/exit-codes.js';
import { CurrencyTotals } from '../../../src/money/amount.js';
import { CurrencyTable } from '../../../src/money/currencies.js';
import { memoryOutput } from '../status/output-helper.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'payouts-unknown-'));
  dirs.push(dir);
  return dir;
}

/** An outcome store over a scratch database (its counts live in memory). */
function outcomeStore(): RunOutcomes {
  return new RunOutcomes(openScratchDb(), 1, () => undefined);
}

const currencies = new CurrencyTable();
/** One outcome per kind: "unknown" is the CLI's own mark, "processing" a status the spec lacks. */
const STATUSES = ['success', 'pending', 'failed', 'canceled', 'not_sent', 'unknown', 'processing'];
const outcomes: PayoutOutcome[] = STATUSES.map((status) => ({
  reference_id: `R-${status}`,
  amount: '1.00',
  currency: 'EUR',
  status,
}));

describe('exitCodeForStatuses', () => {
  it.each([
    [['success'], 0],
    [['success', 'pending'], 5],
    [['processing'], 5],
    [['success', 'processing', 'pending'], 5],
    [['failed'], 4],
    [['canceled'], 4],
    [['not_sent'], 4],
    // The CLI's own "outcome unknown" keeps its exit code (the run ends with 7 anyway).
    [['unknown'], 4],
    [['processing', 'canceled'], 4],
  ])('%j -> %i', (statuses, code) => {
    expect(exitCodeForStatuses(statuses as string[])).toBe(code);
  });
});

describe('undocumented statuses in a send', () => {
  it('are counted as unknown, never as failed, by countOutcomes and the outcome store alike', () => {
    const expected = {
      success: 1,
      pending: 1,
      failed: 2,
      canceled: 1,
      unknown: 2,
      notSent: 1,
      sentEarlier: 0,
      foundAtService: 0,
      paidByRetry: 0,
    };
    expect(countOutcomes(outcomes)).toEqual(expected);
    const store = outcomeStore();
    for (const [row, o] of outcomes.entries()) store.set(row, o);
    expect(store.countsOf()).toEqual(expected);
    expect(exitCodeForStatuses(store.statusKinds())).toBe(4);
    // A row's latest outcome wins: processing read back later as failed moves to failed.
    store.set(6, { ...outcomes[6]!, status: 'failed' });
    expect(store.countsOf()).toMatchObject({ failed: 3, unknown: 1 });
  });

  it('give exit 5 from the outcome store when nothing failed', () => {
    const store = outcomeStore();
    store.set(0, outcomes[0]!);
    store.set(1, outcomes[6]!);
    expect(store.countsOf()).toMatchObject({ success: 1, failed: 0, unknown: 1 });
    expect(exitCodeForStatuses(store.statusKinds())).toBe(5);
  });

  it('are left out of --failed-out, as are pending and outcome-unknown rows', async () => {
    const byRef = new Map(outcomes.map((o) => [o.reference_id, o]));
    const rows = [...STATUSES.map((s) => `R-${s}`), 'R-never-reached'].map((ref, i) => ({
      file: 'run.csv',
      location: `line ${i + 2}`,
      reference_id: ref,
      amount: '1.00',
      currency: 'EUR',
      recipient: 'r@example.com',
      outcome: byRef.get(ref),
    }));
    const path = join(tempDir(), 'failed.csv');
    const count = await writeFailedOut(path, rows);
    const refs = readFileSync(path, 'utf8')
      .trim()
      .split('\n')
      .slice(1)
      .map((l) => l.split(',')[0]);
    expect(refs).toEqual(['R-failed', 'R-canceled', 'R-not_sent', 'R-never-reached']);
    expect(count).toBe(4);
  });

  it('show in the closing line and as unknown_count in the --json head', () => {
    const summary = summarize(outcomes, currencies);
    const line = closingLine(summary, new Chalk({ level: 0 }));
    expect(line).toBe(
      '7 payouts: 1 succeeded, 1 failed, 1 canceled, 1 pending, 2 unknown, 1 not sent; charges unknown (6 payouts with unknown charges)',
    );
    const head = resultsHead(summary, {
      pace: { peakConcurrency: 4, throttled: 0 },
      runId: 'r',
      sandbox: false,
      unknown: [],
      interrupted: false,
    });
    expect(head).toMatchObject({
      payout_count: 7,
      not_sent_count: 1,
      success_count: 1,
      failed_count: 2,
      canceled_count: 1,
      pending_count: 1,
      unknown_count: 2,
    });
    const plain = closingLine(summarize(outcomes.slice(0, 2), currencies), new Chalk({ level: 0 }));
    expect(plain).toBe(
      '2 payouts: 1 succeeded, 0 failed, 1 pending; charges unknown (2 payouts with unknown charges)',
    );
  });
});

/** Retitles the window, rings the bell and breaks the line, if it reaches a terminal raw. */
const EVIL = '\u001b]0;pwned\u0007\nX';
const SHOWN = '\\x1b]0;pwned\\x07\\nX';
const RAW = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

describe('send output shows text from outside escaped', () => {
  it('keeps each results row on one line', async () => {
    const m = memoryOutput();
    const rows: PayoutOutcome[] = [
      { ...outcomes[2]!, reference_id: `A${EVIL}`, message: `Declined${EVIL}` },
      { ...outcomes[0]!, reference_id: 'B', transaction_id: `T${EVIL}` },
    ];
    const table = await resultsTable(listRows(rows), m.output, true, currencies);
    m.output.print(table);
    // Tabs are ours: on a pipe the table is tab-separated.
    expect(m.stdout().replaceAll('\t', ' ')).not.toMatch(RAW);
    const lines = m.stdout().split('\n');
    expect(lines.filter((l) => l.includes(`A${SHOWN}`))).toEqual([
      expect.stringMatching(/failed.*EUR 1\.00.*Declined\\x1b\]0;pwned\\x07\\nX/),
    ]);
    expect(lines.filter((l) => l.includes(`T${SHOWN}`))).toHaveLength(1);
  });

  it('shows a batch reference and webhook URL from an input file escaped in the summary', () => {
    const plan = {
      payoutCount: 1,
      totals: new CurrencyTotals(),
      requestCount: 1,
      batchReference: `B${EVIL}`,
      webhookUrl: `https://h.example/${EVIL}`,
    } as unknown as RunPlan;
    const text = summaryText(
      {
        plan,
        split: null,
        dest: {
          sandbox: false,
          chunkSize: 100,
          concurrency: { initial: 4, max: 4 },
          history: 'this folder only',
        },
        maxTotals: [],
      },
      currencies,
      new Chalk({ level: 0 }),
    );
    expect(text).not.toMatch(RAW);
    expect(text).toContain(`Batch:          B${SHOWN}\n`);
    expect(text).toContain(`Webhook:        https://h.example/${SHOWN}`);
  });
});
