import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { errorCode } from './fsutil.js';
import { serviceDirOf } from './ids.js';
import { readJournalFile } from './reader.js';
import { type RefState, RefTable } from './state.js';

/** Suffix of journal files. */
export const JOURNAL_SUFFIX = '.ndjson';

/** One reference found in another run's journal. */
export interface ScanHit {
  ref: string;
  runId: string;
  /** Payout hash of the run's latest intent for the reference (absent when it has none). */
  hash?: string;
  state: RefState;
}

/** Options of scanServiceJournals. */
export interface ScanOptions {
  stateDir: string;
  serviceKey: string;
  exceptRunId?: string;
  wants: (ref: string) => boolean;
  visit: (hit: ScanHit) => void;
}

/** Run ids of the journal files in a folder, sorted; none when the folder does not exist. */
export async function journalRunIds(dir: string): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return [];
    throw err;
  }
  return names
    .filter((n) => n.endsWith(JOURNAL_SUFFIX) && n.length > JOURNAL_SUFFIX.length)
    .map((n) => n.slice(0, -JOURNAL_SUFFIX.length))
    .sort();
}

/**
 * Streams every journal of a service (all runs but `exceptRunId`) and reports each wanted
 * reference that was sent in a run, once per run, with its final state there. Only wanted
 * references are tracked, one journal at a time, so memory follows the caller's input.
 */
export async function scanServiceJournals(opts: ScanOptions): Promise<void> {
  const dir = serviceDirOf(opts.stateDir, opts.serviceKey);
  for (const fileRunId of await journalRunIds(dir)) {
    if (fileRunId === opts.exceptRunId) continue;
    const table = new RefTable(opts.wants);
    let runId = fileRunId;
    try {
      await readJournalFile(join(dir, `${fileRunId}${JOURNAL_SUFFIX}`), (rec) => {
        if (rec.t === 'run') runId = rec.run_id;
        else table.apply(rec);
      });
    } catch (err) {
      // Deleted since the folder was listed: it holds nothing any more.
      if (errorCode(err) === 'ENOENT') continue;
      throw err;
    }
    for (const [ref, t] of table.entries()) {
      if (!t.sent) continue;
      const hit: ScanHit = { ref, runId, state: t.state };
      if (t.hash !== undefined) hit.hash = t.hash;
      opts.visit(hit);
    }
  }
}
