import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import type { HeldRef } from '../../../src/domain/chain.js';
import { adoptLocally } from '../../../src/state/adopt.js';
import { thisMachine } from '../../../src/state/intake.js';
import { decide } from '../../../src/core/send/decide.js';
import {
  type InFlight,
  inFlightOf,
  type SentEarlier,
  sentEarlier,
  stopping,
} from '../../../src/core/send/fates.js';
import { refusalError } from '../../../src/core/send/refusals.js';
import type { PriorRow } from '../../../src/domain/history.js';
import {
  openStateDb,
  priorRows,
  payoutHash,
  RunIntake,
  runIdFor,
  type RunState,
  RunState as State,
  type StateDb,
} from '../../../src/state/index.js';
import type { StateWriter } from '../../../src/state/writer.js';

const made: string[] = [];
const opened: StateDb[] = [];

/** A fresh state folder, removed after the test. */
export async function tempStateDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'payouts-state-'));
  made.push(dir);
  return join(dir, 'state');
}

afterEach(async () => {
  for (const db of opened.splice(0)) if (db.open) db.close();
  for (const dir of made.splice(0)) await rm(dir, { recursive: true, force: true });
});

export const SERVICE = 'https://pay.example.com';

/** A clock that ticks one second per call from a fixed start. */
export function fakeClock(start = Date.UTC(2026, 0, 2, 3, 4, 5)): () => Date {
  let t = start;
  return () => {
    const d = new Date(t);
    t += 1000;
    return d;
  };
}

/** Opens the state database of a folder, closed after the test. */
export async function openDb(
  stateDir: string,
  lockWait?: Parameters<typeof openStateDb>[1],
): Promise<StateDb> {
  const db = await openStateDb(stateDir, lockWait);
  opened.push(db);
  return db;
}

/** A payout of reference `ref` (amount 1.00 EUR unless given). */
export function payout(ref: string, amount = '1.00') {
  return { reference_id: ref, amount, currency: 'EUR', recipient: 'a@example.com' };
}

/** Stages `refs` as pass 1 would. */
export function stage(db: StateDb, refs: string[], amount?: string): RunIntake {
  const rows = RunIntake.begin(db, { pid: process.pid, inputs: ['payouts.csv'], now: new Date() });
  refs.forEach((ref, i) => {
    const p = payout(ref, amount);
    rows.add({ ...p, file: 'payouts.csv', location: `line ${i + 2}`, hash: payoutHash(p) });
  });
  rows.finish();
  return rows;
}

/** What a run finds of its payouts in the history: those sent earlier (failed too), those in flight. */
export interface Prior {
  settled: Map<number, SentEarlier>;
  inFlight: Map<string, InFlight>;
}

/**
 * The payouts a dry run decides were sent earlier or are in flight, from the history's rows
 * (decide.ts); a reference held as another payout is refused, as the dry run refuses it.
 */
export function priorFrom(rows: PriorRow[]): Prior {
  const decision = decide({ held: rows, retries: [] }, 'dry-run');
  const refused = stopping(decision);
  if (refused.length) throw refusalError(refused, { places: () => new Map() });
  const settled = sentEarlier(decision);
  for (const [row, f] of decision.fates) {
    if (f.kind === 'refused' && f.refusal.kind === 'failed-earlier')
      settled.set(row, f.refusal.earlier);
  }
  return { settled, inFlight: inFlightOf(decision) };
}

/** What a send of `refs` finds before it asks: staged, looked up (of SERVICE unless given), discarded. */
export function priorOf(
  db: StateDb,
  refs: string[],
  opts: { serviceKey?: string; amount?: string } = {},
): Prior {
  const rows = stage(db, refs, opts.amount);
  try {
    return priorFrom(priorRows(rows, opts.serviceKey ?? SERVICE, ''));
  } finally {
    rows.discard();
  }
}

/** Stages `refs` as pass 1 would and opens the run's state (of SERVICE unless given). */
export function openRun(
  db: StateDb,
  refs: string[],
  opts: {
    inputHash?: string;
    serviceKey?: string;
    amount?: string;
    now?: () => Date;
    clientId?: string;
    writer?: StateWriter;
  } = {},
): RunState {
  const rows = stage(db, refs, opts.amount);
  const serviceKey = opts.serviceKey ?? SERVICE;
  const inputHash = opts.inputHash ?? 'a'.repeat(64);
  const now = opts.now ?? fakeClock();
  const runId = runIdFor(serviceKey, inputHash);
  // As a send on state.db does: the store adopts the staged rows, then the state opens.
  const run = adoptLocally(db, rows, {
    runId,
    serviceKey,
    now: now().toISOString(),
    sender: thisMachine(),
    header: {
      service: serviceKey,
      client_id: opts.clientId ?? 'abc-client-id',
      inputs: ['payouts.csv'],
      input_hash: inputHash,
      payout_count: refs.length,
    },
  });
  return State.open({
    db,
    run,
    runId,
    chargeMinor: () => undefined,
    now,
    ...(opts.writer ? { writer: opts.writer } : {}),
  });
}

/** The state columns of a run's payouts, by reference. */
export function states(db: StateDb, state: RunState): Record<string, string> {
  const rows = db
    .prepare('SELECT reference_id, state FROM journal WHERE run = ? ORDER BY row')
    .all(state.id) as Array<{ reference_id: string; state: string }>;
  return Object.fromEntries(rows.map((r) => [r.reference_id, r.state]));
}

/** The rows of a run's payouts of these references, for an intent. */
export function rowsOf(state: RunState, ...refs: string[]): number[] {
  return refs.map((ref) => {
    const r = state.db
      .prepare('SELECT row FROM payouts WHERE run = ? AND reference_id = ?')
      .get(state.id, ref) as { row: number };
    return r.row;
  });
}

/** A retry `ref` of `of` as a chain's link, in state `kind`, of run `run-REF`. */
export function heldLink(ref: string, of: string, kind: HeldRef['kind'] = 'failed'): HeldRef {
  const status = kind === 'doubt' ? null : kind;
  return {
    ref,
    retryOf: of,
    runId: `run-${ref}`,
    kind,
    status,
    transactionId: null,
    charges: null,
    message: null,
    at: null,
  };
}
