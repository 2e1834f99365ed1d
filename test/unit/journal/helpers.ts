import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { type RunHeader, RunJournal, runIdFor } from '../../../src/journal/index.js';

const made: string[] = [];
const opened: RunJournal[] = [];

/** A fresh state folder, removed after the test. */
export async function tempStateDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'payouts-journal-'));
  made.push(dir);
  return join(dir, 'state');
}

afterEach(async () => {
  // Journals a test left open would otherwise hold their file handles until garbage collection.
  for (const j of opened.splice(0)) await j.close().catch(() => {});
  for (const dir of made.splice(0)) await rm(dir, { recursive: true, force: true });
});

/** A header for a run of `count` payouts read from `input_hash`. */
export function header(inputHash = 'a'.repeat(64), count = 3): RunHeader {
  return {
    service: 'https://pay.example.com',
    client_id: 'abc-client-id',
    inputs: ['payouts.csv'],
    input_hash: inputHash,
    payout_count: count,
  };
}

/** A clock that ticks one second per call from a fixed start. */
export function fakeClock(start = Date.UTC(2026, 0, 2, 3, 4, 5)): () => Date {
  let t = start;
  return () => {
    const d = new Date(t);
    t += 1000;
    return d;
  };
}

export const SERVICE = 'https://pay.example.com abc-client-id';

/** Opens the journal of a run of SERVICE identified by an input hash. */
export function openRun(
  stateDir: string,
  inputHash = 'a'.repeat(64),
  opts: { serviceKey?: string; count?: number; now?: () => Date } = {},
): Promise<RunJournal> {
  const serviceKey = opts.serviceKey ?? SERVICE;
  return track(
    RunJournal.open({
      stateDir,
      serviceKey,
      runId: runIdFor(serviceKey, inputHash),
      header: header(inputHash, opts.count),
      now: opts.now ?? fakeClock(),
    }),
  );
}

/** Closes the journal after the test, if the test did not. */
export async function track(journal: Promise<RunJournal>): Promise<RunJournal> {
  const j = await journal;
  opened.push(j);
  return j;
}
