import type { Problem } from '../../errors.js';
import { InputError, OutcomeUnknownError } from '../../errors.js';
import { type RefState, type RunJournal, scanServiceJournals } from '../../journal/index.js';
import type { Reconciled } from './engine.js';
import { fromRecord } from './engine.js';
import type { PayoutOutcome } from './outcome.js';

/** What earlier attempts tell about a run's payouts, before anything new is sent. */
export interface PriorState {
  /** Sent before (this run or another run to the same service): not to be sent again. */
  settled: Map<string, Omit<PayoutOutcome, 'reference_id' | 'amount' | 'currency'>>;
  /** Possibly sent, outcome never recorded: read back before sending. */
  inFlight: Set<string>;
}

/** Fields of a confirmed journal state, as an outcome. */
function confirmedOutcome(
  s: Extract<RefState, { state: 'confirmed' }>,
): Omit<PayoutOutcome, 'reference_id' | 'amount' | 'currency'> {
  return {
    status: s.status,
    ...(s.transaction_id ? { transaction_id: s.transaction_id } : {}),
    ...(s.charges !== undefined ? { charges: s.charges } : {}),
    ...(s.message ? { message: s.message } : {}),
  };
}

/**
 * Gathers what this run's journal and every other journal of the same service know about
 * the run's references. A reference held elsewhere with a different amount, currency or
 * recipient is an input problem: nothing is sent.
 */
export async function priorState(opts: {
  stateDir: string;
  serviceKey: string;
  journal: RunJournal;
  refs: ReadonlyMap<string, string>;
}): Promise<PriorState> {
  const settled: PriorState['settled'] = new Map();
  const inFlight = new Set<string>();
  const note = (ref: string, state: RefState) => {
    if (state.state === 'confirmed') {
      settled.set(ref, confirmedOutcome(state));
      inFlight.delete(ref);
    } else if (state.state === 'in-flight' && !settled.has(ref)) {
      inFlight.add(ref);
    }
  };
  for (const ref of opts.refs.keys()) {
    const s = opts.journal.stateOf(ref);
    if (s) note(ref, s);
  }
  const conflicts: Problem[] = [];
  await scanServiceJournals({
    stateDir: opts.stateDir,
    serviceKey: opts.serviceKey,
    exceptRunId: opts.journal.runId,
    wants: (ref) => opts.refs.has(ref),
    visit: (hit) => {
      if (hit.state.state === 'free') return;
      if (hit.hash !== undefined && hit.hash !== opts.refs.get(hit.ref)) {
        conflicts.push({
          file: `run ${hit.runId}`,
          field: 'reference_id',
          value: hit.ref,
          message:
            'was already sent to this service with a different amount, currency or recipient: give this payout a new reference_id (see `payouts runs show ' +
            `${hit.runId}\`)`,
        });
        return;
      }
      note(hit.ref, hit.state);
    },
  });
  if (conflicts.length) throw new InputError(conflicts);
  return { settled, inFlight };
}

/** Applies a read-back of in-flight payouts to the prior state and the journal. */
export function applyReconciled(prior: PriorState, r: Reconciled, journal: RunJournal): void {
  if (r.found.length) {
    journal.recordOutcome(
      -1,
      r.found.map(({ ref, record }) => ({ ref, ...fromRecord(record) })),
    );
  }
  for (const { ref, record } of r.found) {
    prior.settled.set(ref, fromRecord(record));
    prior.inFlight.delete(ref);
  }
  if (r.notFound.length) journal.recordNotApplied(-1, r.notFound, 'not found when read back');
  for (const ref of r.notFound) prior.inFlight.delete(ref);
  if (r.unknown.length) {
    journal.recordUnknown(r.unknown, 'could not be read back');
    throw (
      r.fatal ??
      new OutcomeUnknownError(
        `${r.unknown.length} payout${r.unknown.length === 1 ? '' : 's'} of an earlier attempt may have been sent, and could not be read back from the service; nothing new was sent: run the same command again when the service answers`,
        r.unknown,
      )
    );
  }
}
