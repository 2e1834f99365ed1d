/**
 * Adopting a run, written once for both stores: the staged payouts become the run named by
 * the service and the input hash, or resume the run of that id when it holds the very same
 * payouts (its last send's reports forgotten, as each send reports its own); an older run of
 * that id with other payouts keeps its states under a suffixed id. The steps are yielded as
 * statements of journal-sql.ts, so that state.db runs them in its synchronous transaction and
 * a shared history in its own; each store answers only whether a run holds the staged payouts.
 */
import type { RunHeader } from '../domain/history.js';
import type { Dialect } from './dialect.js';
import { serviceId } from './hash.js';
import { type RunIntake, removeRun, type Sender } from './intake.js';
import { JOURNAL_SQL, RUN_HEADER } from './journal-sql.js';
import type { StateDb } from './db.js';

/** A run to adopt. */
export interface Adopting {
  runId: string;
  serviceKey: string;
  header: RunHeader;
  /** ISO 8601. */
  now: string;
  /** Who sends it; undefined: a resumed run keeps who sent it (it sends nothing). */
  sender: Sender | undefined;
}

/** The run adopted: its id in the store, and whether it was resumed. */
export interface AdoptedId {
  id: number;
  resumed: boolean;
}

/** One step of an adoption, as the store runs it. */
export type AdoptStep =
  /** A statement whose first row (or undefined) is the step's answer. */
  | { get: string; params: unknown[] }
  /** A statement run for its effect. */
  | { run: string; params: unknown[] }
  /** Whether the stored run `same` holds exactly the staged payouts, row for row. */
  | { same: number };

/**
 * The steps of adopting run `a` in a store of dialect `d`; `staged` is the id of the staged
 * rows' run in state.db (a shared history records the run anew instead).
 */
export function* adoption(
  d: Dialect,
  a: Adopting,
  staged: number,
): Generator<AdoptStep, AdoptedId, unknown> {
  const sql = JOURNAL_SQL[d];
  const old = (yield { get: sql.findRun, params: [a.runId] }) as
    | { id: number; payout_count: number }
    | undefined;
  const sender = (id: number): AdoptStep | undefined =>
    a.sender && { run: sql.sender, params: [a.sender.host, a.sender.user, id] };
  if (old && Number(old.payout_count) === a.header.payout_count && (yield { same: old.id })) {
    yield { run: sql.resumeRun, params: [a.now, old.id] };
    const who = sender(old.id);
    if (who) yield who;
    yield { run: sql.forgetReports, params: [old.id] };
    return { id: old.id, resumed: true };
  }
  if (old) yield { run: sql.supersede, params: [old.id] };
  const h = a.header;
  const values: Record<(typeof RUN_HEADER)[number], unknown> = {
    run_id: a.runId,
    service_id: serviceId(a.serviceKey),
    service: h.service,
    client_id: h.client_id,
    inputs: JSON.stringify(h.inputs),
    input_hash: h.input_hash,
    payout_count: h.payout_count,
    batch_reference: h.batch_reference ?? null,
    created_at: a.now,
    updated_at: a.now,
    csv_style: h.csv_style ?? null,
    send_args: h.send_args?.length ? JSON.stringify(h.send_args) : null,
  };
  // state.db's staged rows are a run already: its row gets the header.
  const params = RUN_HEADER.map((c) => values[c]);
  if (d === 'sqlite') params.push(staged);
  const row = (yield { get: sql.record, params }) as { id: number };
  const who = sender(row.id);
  if (who) yield who;
  return { id: row.id, resumed: false };
}

/** Whether run `stored` of state.db holds exactly the payouts staged as run `staged`. */
function sameRows(db: StateDb, stored: number, staged: number): boolean {
  const differ = db
    .prepare(
      `SELECT 1 FROM payouts s LEFT JOIN payouts o ON o.run = ? AND o.row = s.row
       WHERE s.run = ? AND (o.row IS NULL OR o.reference_id != s.reference_id
         OR o.hash IS NOT s.hash OR o.hash_version != s.hash_version) LIMIT 1`,
    )
    .get(stored, staged);
  return differ === undefined;
}

/**
 * Adopts the rows pass 1 staged in a SQLite database (state.db, or a shared history's local
 * copy) in one transaction: a resumed run drops the staged copy of its payouts.
 */
export function adoptLocally(db: StateDb, intake: RunIntake, a: Adopting): AdoptedId {
  return db
    .transaction(() => {
      const steps = adoption('sqlite', a, intake.id);
      let answer: unknown;
      for (let s = steps.next(); ; s = steps.next(answer)) {
        if (s.done) {
          if (s.value.resumed) removeRun(db, intake.id);
          return s.value;
        }
        const step = s.value;
        if ('same' in step) answer = sameRows(db, step.same, intake.id);
        else if ('get' in step) answer = db.prepare(step.get).get(...step.params);
        else db.prepare(step.run).run(...step.params);
      }
    })
    .immediate();
}
