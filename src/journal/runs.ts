import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { UsageError } from '../errors.js';
import { errorCode } from './fsutil.js';
import { journalsDirOf } from './ids.js';
import { readJournalFile } from './reader.js';
import type { RunRecord } from './records.js';
import { JOURNAL_SUFFIX, journalRunIds } from './scan.js';
import { type RefState, RefTable } from './state.js';

/** A run as `payouts runs` lists it. */
export interface RunSummary {
  run_id: string;
  service: string;
  client_id: string;
  inputs: string[];
  created_at: string;
  updated_at: string;
  payout_count: number;
  counts: {
    success: number;
    failed: number;
    canceled: number;
    pending: number;
    in_flight: number;
    not_sent: number;
  };
}

/** A run with the state of each payout its journal names. */
export interface RunDetail {
  summary: RunSummary;
  payouts: Array<{ reference_id: string; state: RefState }>;
}

/** A journal file on disk. */
interface JournalFile {
  runId: string;
  path: string;
}

/** Every journal file of every service. */
async function allJournalFiles(stateDir: string): Promise<JournalFile[]> {
  const root = journalsDirOf(stateDir);
  let services: string[];
  try {
    services = (await readdir(root, { withFileTypes: true }))
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .sort();
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return [];
    throw err;
  }
  const files: JournalFile[] = [];
  for (const service of services) {
    const dir = join(root, service);
    for (const runId of await journalRunIds(dir)) {
      files.push({ runId, path: join(dir, `${runId}${JOURNAL_SUFFIX}`) });
    }
  }
  return files;
}

/** Reads one journal whole; undefined when it has no header (a crash before the run began). */
async function loadRun(path: string): Promise<{ header: RunRecord; table: RefTable } | undefined> {
  const table = new RefTable();
  let header: RunRecord | undefined;
  try {
    await readJournalFile(path, (rec) => {
      if (rec.t === 'run') header = rec;
      else table.apply(rec);
    });
  } catch (err) {
    // Deleted since the folder was listed.
    if (errorCode(err) === 'ENOENT') return undefined;
    throw err;
  }
  return header ? { header, table } : undefined;
}

/** Counts a run's payouts by state; references never sent, or freed, are "not sent". */
function summarize(header: RunRecord, table: RefTable): RunSummary {
  const counts = { success: 0, failed: 0, canceled: 0, pending: 0, in_flight: 0, not_sent: 0 };
  for (const [, t] of table.entries()) {
    const s = t.state;
    if (s.state === 'in-flight') counts.in_flight += 1;
    else if (s.state === 'confirmed') {
      const status = s.status.toLowerCase();
      if (status === 'success' || status === 'failed' || status === 'canceled') counts[status] += 1;
      // A status the interface does not name is not known to be final: count it as pending.
      else counts.pending += 1;
    }
  }
  const accounted =
    counts.success + counts.failed + counts.canceled + counts.pending + counts.in_flight;
  counts.not_sent = Math.max(0, header.payout_count - accounted);
  return {
    run_id: header.run_id,
    service: header.service,
    client_id: header.client_id,
    inputs: header.inputs,
    created_at: header.created_at,
    updated_at: table.lastAt ?? header.created_at,
    payout_count: header.payout_count,
    counts,
  };
}

/** Newest first: by creation time, then run id for a stable order. */
function newestFirst(a: RunSummary, b: RunSummary): number {
  if (a.created_at !== b.created_at) return a.created_at < b.created_at ? 1 : -1;
  return a.run_id < b.run_id ? -1 : a.run_id > b.run_id ? 1 : 0;
}

/** Summaries of every run of every service, newest first. */
export async function listRuns(stateDir: string): Promise<RunSummary[]> {
  const out: RunSummary[] = [];
  for (const file of await allJournalFiles(stateDir)) {
    const run = await loadRun(file.path);
    if (run) out.push(summarize(run.header, run.table));
  }
  return out.sort(newestFirst);
}

/** The run whose id starts with a prefix, with each payout's state; UsageError when none or several match. */
export async function readRun(stateDir: string, runIdPrefix: string): Promise<RunDetail> {
  const prefix = runIdPrefix.trim().toLowerCase();
  if (!/^[a-z0-9_-]+$/.test(prefix)) {
    throw new UsageError(
      `invalid run id ${JSON.stringify(runIdPrefix)}: give the run id or its first characters`,
    );
  }
  const matches = (await allJournalFiles(stateDir)).filter((f) =>
    f.runId.toLowerCase().startsWith(prefix),
  );
  const runs: Array<{ header: RunRecord; table: RefTable }> = [];
  for (const file of matches) {
    const run = await loadRun(file.path);
    if (run) runs.push(run);
  }
  const [only, ...others] = runs;
  if (!only) {
    throw new UsageError(`no run id starts with ${JSON.stringify(runIdPrefix)}: see payouts runs`);
  }
  if (others.length > 0) {
    const ids = runs.map((r) => r.header.run_id).join(', ');
    throw new UsageError(
      `${runs.length} runs start with ${JSON.stringify(runIdPrefix)} (${ids}): give more characters`,
    );
  }
  const payouts = [...only.table.entries()].map(([reference_id, t]) => ({
    reference_id,
    state: t.state,
  }));
  return { summary: summarize(only.header, only.table), payouts };
}
