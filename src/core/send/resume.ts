import type { Problem } from '../../errors.js';
import { InputError, OutcomeUnknownError } from '../../errors.js';
import { type RefState, type RunJournal, scanServiceJournals } from '../../journal/index.js';
import type { Reconciled } from './engine.js';
import { fromRecord } from './engine.js';
import type { PayoutOutcome } from './outcome.js';
import type { RefIndex } from './ref-index.js';
import type { PayoutSpool } from './spool.js';

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

/** A reference an earlier attempt names, found by fingerprint and not yet confirmed as ours. */
interface Candidate {
  ref: string;
  state: RefState;
  /** The other run that names it (absent for this run's own journal). */
  runId?: string;
  /** The payout hash of that run's latest intent for it, when it has one. */
  hash?: string;
}

/**
 * Gathers what this run's journal and every other journal of the same service know about
 * the run's references. A reference held elsewhere with a different amount, currency or
 * recipient is an input problem: nothing is sent.
 *
 * The journals are matched against the run's reference fingerprints; a match counts only once
 * its text is found in the spool (what this run sends), whose payout hash it is compared with.
 */
export async function priorState(opts: {
  stateDir: string;
  serviceKey: string;
  journal: RunJournal;
  refs: RefIndex;
  spool: PayoutSpool;
}): Promise<PriorState> {
  const settled: PriorState['settled'] = new Map();
  const inFlight = new Set<string>();
  const candidates: Candidate[] = [];
  for (const [ref, state] of opts.journal.states()) {
    if (opts.refs.has(ref)) candidates.push({ ref, state });
  }
  await scanServiceJournals({
    stateDir: opts.stateDir,
    serviceKey: opts.serviceKey,
    exceptRunId: opts.journal.runId,
    wants: (ref) => opts.refs.has(ref),
    visit: (hit) => {
      if (hit.state.state === 'free') return;
      candidates.push({ ref: hit.ref, state: hit.state, runId: hit.runId, hash: hit.hash });
    },
  });
  if (candidates.length === 0) return { settled, inFlight };
  // Exact text: the payout hash of each candidate that really is one of this run's payouts.
  const wanted = new Set(candidates.map((c) => c.ref));
  const ours = new Map<string, string>();
  await opts.spool.read(({ payout, hash }) => {
    if (wanted.has(payout.reference_id)) ours.set(payout.reference_id, hash);
  });
  const note = (ref: string, state: RefState) => {
    if (state.state === 'confirmed') {
      settled.set(ref, confirmedOutcome(state));
      inFlight.delete(ref);
    } else if (state.state === 'in-flight' && !settled.has(ref)) {
      inFlight.add(ref);
    }
  };
  const conflicts: Problem[] = [];
  for (const c of candidates) {
    const ourHash = ours.get(c.ref);
    if (ourHash === undefined) continue;
    if (c.runId === undefined) {
      note(c.ref, c.state);
      continue;
    }
    if (c.hash !== undefined && c.hash !== ourHash) {
      conflicts.push({
        file: `run ${c.runId}`,
        field: 'reference_id',
        value: c.ref,
        message:
          'was already sent to this service with a different amount, currency or recipient: give this payout a new reference_id (see `payouts runs show ' +
          `${c.runId}\`)`,
      });
      continue;
    }
    note(c.ref, c.state);
  }
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
