/**
 * What a summary compares a run with (src/core/series.ts): the latest runs of a service, a
 * few payouts of one of them, and the payouts the history holds under some references (a
 * retry's original, a reference sent as another payout). Written once for both databases, as
 * journal-sql.ts writes its lookups; each read goes through an index, the runs' and a run's
 * payouts with a LIMIT, whatever the history's size.
 */
import type { EarlierRun, HeldPayout } from '../domain/history.js';
import type { Dialect } from './dialect.js';
import { serviceId } from './hash.js';
import type { RunIntake } from './intake.js';
import { jsonTexts } from './journal-sql.js';
import { readHistory } from './prior.js';

export type { EarlierRun, HeldPayout } from '../domain/history.js';

/** The runs compared at most: the latest of the service. */
export const EARLIER_RUNS = 10;

/**
 * The service's latest runs but one (its own id, a resumed run's), newest first: parameters
 * are the service id and the run id left out.
 */
export function latestRunsSql(schema?: string): string {
  const s = schema ? `${schema}.` : '';
  return `SELECT run_id, inputs, batch_reference, created_at FROM ${s}runs
    WHERE service_id = ? AND run_id IS NOT NULL AND run_id <> ? AND payout_count > 0
    ORDER BY id DESC LIMIT ${EARLIER_RUNS}`;
}

/**
 * A run's first payouts in row order, at most a limit: parameters are the run id, the run id
 * again and the limit. The run's key is a scalar, so both planners walk `payouts` by its
 * primary key (run, row) and stop at the limit, however large the run.
 */
export function runPayoutsSql(schema?: string): string {
  const s = schema ? `${schema}.` : '';
  return `SELECT p.reference_id, p.amount, p.currency, p.recipient, p.description, CAST(? AS TEXT) AS run_id
    FROM ${s}payouts p WHERE p.run = (SELECT r.id FROM ${s}runs r WHERE r.run_id = ?)
    ORDER BY p.row LIMIT ?`;
}

/**
 * The payouts runs of the service hold under references given as one JSON array, the latest
 * run's first: parameters are the array and the service id.
 */
export function heldPayoutsSql(d: Dialect, schema?: string): string {
  const s = schema ? `${schema}.` : '';
  return `SELECT p.reference_id, p.amount, p.currency, p.recipient, p.description, r.run_id
    FROM ${jsonTexts(d)} j JOIN ${s}payouts p ON p.reference_id = j.value
      JOIN ${s}runs r ON r.id = p.run
    WHERE r.service_id = ? ORDER BY p.run DESC`;
}

/** The latest held payout of each reference. */
export function latestOf(rows: HeldPayout[]): Map<string, HeldPayout> {
  const out = new Map<string, HeldPayout>();
  for (const r of rows) if (!out.has(r.reference_id)) out.set(r.reference_id, r);
  return out;
}

/** The service's latest runs but `except`, read where priorRows reads (state.db). */
export function latestRuns(
  intake: RunIntake,
  stateDir: string,
  serviceKey: string,
  except: string,
): EarlierRun[] {
  const read = (schema: string) =>
    intake.db.prepare(latestRunsSql(schema)).all(serviceId(serviceKey), except) as EarlierRun[];
  return readHistory(intake, stateDir, read) ?? [];
}

/** A run's first payouts, at most `limit`, read where priorRows reads (state.db). */
export function runPayouts(
  intake: RunIntake,
  stateDir: string,
  runId: string,
  limit: number,
): HeldPayout[] {
  const read = (schema: string) =>
    intake.db.prepare(runPayoutsSql(schema)).all(runId, runId, limit) as HeldPayout[];
  return readHistory(intake, stateDir, read) ?? [];
}

/** What runs of the service hold under `refs`, read where priorRows reads (state.db). */
export function heldPayouts(
  intake: RunIntake,
  stateDir: string,
  serviceKey: string,
  refs: string[],
): HeldPayout[] {
  if (!refs.length) return [];
  const read = (schema: string) =>
    intake.db
      .prepare(heldPayoutsSql('sqlite', schema))
      .all(JSON.stringify(refs), serviceId(serviceKey)) as HeldPayout[];
  return readHistory(intake, stateDir, read) ?? [];
}
