import { existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  listRuns,
  listRunsIn,
  openStateDb,
  type RowReader,
  type RunSummary,
  readRun,
  readRunIn,
  STATE_DB,
  type StateDb,
} from '../../state/index.js';
import { UsageError } from '../../errors.js';
import type { Output } from '../../output/output.js';
import { colourStatus } from '../send/render.js';

/** One line of counts for a run. */
function countsText(r: RunSummary): string {
  const c = r.counts;
  const parts = [
    `${c.success} success`,
    `${c.failed} failed`,
    `${c.canceled} canceled`,
    `${c.pending} pending`,
  ];
  if (c.in_flight) parts.push(`${c.in_flight} in flight`);
  if (c.not_sent) parts.push(`${c.not_sent} not sent`);
  return parts.join(', ');
}

/**
 * Runs `read` on the state database; undefined when there is none (nothing was ever
 * sent), so that listing runs creates nothing.
 */
async function withStateDb<T>(stateDir: string, read: (db: StateDb) => T): Promise<T | undefined> {
  if (!existsSync(join(stateDir, STATE_DB))) {
    return undefined;
  }
  const db = await openStateDb(stateDir);
  try {
    return read(db);
  } finally {
    db.close();
  }
}

/** Where runs are read: the state folder, or a shared history (postgres://…) when given. */
export interface RunsSource {
  stateDir: string;
  stateUrl?: string;
}

/** Runs `read` on a shared history. */
async function withHistory<T>(url: string, read: (rows: RowReader) => Promise<T>): Promise<T> {
  const { PgHistory } = await import('../../state/pg/history.js');
  const history = await PgHistory.open(url);
  try {
    return await read((sql, params) => history.rows(sql, params));
  } finally {
    await history.close();
  }
}

/** `payouts runs`: the recorded runs, newest first. */
export async function showRunList(from: RunsSource, output: Output): Promise<number> {
  const runs =
    (from.stateUrl
      ? await withHistory(from.stateUrl, listRunsIn)
      : await withStateDb(from.stateDir, listRuns)) ?? [];
  if (output.json) {
    output.printJson(runs);
    return 0;
  }
  if (!runs.length) {
    output.print('No runs journaled yet.');
    return 0;
  }
  const rows = runs.map((r) => [
    r.run_id,
    r.updated_at,
    r.service,
    r.inputs.join(' '),
    String(r.payout_count),
    countsText(r),
  ]);
  output.print(
    await output.table(['run', 'last activity', 'service', 'inputs', 'payouts', 'states'], rows),
  );
  return 0;
}

/** `payouts runs show ID`: one run's payouts and their states. */
export async function showRun(from: RunsSource, id: string, output: Output): Promise<number> {
  const run = from.stateUrl
    ? await withHistory(from.stateUrl, (rows) => readRunIn(rows, id))
    : await withStateDb(from.stateDir, (db) => readRun(db, id));
  if (!run) throw new UsageError(`no run id starts with ${JSON.stringify(id)}: see payouts runs`);
  const { summary, payouts } = run;
  if (output.json) {
    output.printJson({
      ...summary,
      payouts: payouts.map((p) => ({ reference_id: p.reference_id, ...p.state })),
    });
    return 0;
  }
  output.print(`Run ${summary.run_id}: ${summary.inputs.join(' ')} -> ${summary.service}`);
  output.print(
    `Created ${summary.created_at}, last activity ${summary.updated_at}; ${countsText(summary)}`,
  );
  const rows = payouts.map((p) => {
    const s = p.state;
    if (s.state === 'confirmed') {
      return [
        p.reference_id,
        colourStatus(s.status, output.color),
        s.transaction_id ?? '',
        s.message ?? '',
      ];
    }
    return [
      p.reference_id,
      s.state === 'in-flight' ? output.color.yellow('in flight') : 'not sent',
      '',
      '',
    ];
  });
  if (rows.length)
    output.print(await output.table(['reference_id', 'state', 'transaction_id', 'message'], rows));
  return 0;
}
