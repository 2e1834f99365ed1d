import type { Problem } from '../../errors.js';
import { InputError, OutcomeUnknownError } from '../../errors.js';
import { type RefState, type RunJournal, scanServiceJournals } from '../../journal/index.js';
import type { PayoutRequest } from '../../api/types.js';
import { fromRecord } from './engine.js';
import type { PayoutOutcome } from './outcome.js';
import type { ReadBackResult } from './readback.js';
import type { RefIndex } from './ref-index.js';
import type { PayoutSpool } from './spool.js';

/** What earlier attempts tell about a run's payouts, before anything new is sent. */
export interface PriorState {
  /** Sent before (this run or another run to the same service): not to be sent again. */
  settled: Map<string, Omit<PayoutOutcome, 'reference_id' | 'amount' | 'currency'>>;
  /** Possibly sent, outcome never recorded: read back before sending. */
  inFlight: Map<string, InFlight>;
}

/** A payout an earlier attempt may have sent, and when its request went out at the latest. */
export interface InFlight {
  payout: PayoutRequest;
  /** Milliseconds since the epoch. */
  sentAt: number;
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
  const inFlight = new Map<string, InFlight>();
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
  const ours = new Map<string, { hash: string; payout: PayoutRequest }>();
  await opts.spool.read(({ payout, hash }) => {
    if (wanted.has(payout.reference_id)) ours.set(payout.reference_id, { hash, payout });
  });
  const note = (ref: string, state: RefState, payout: PayoutRequest) => {
    if (state.state === 'confirmed') {
      settled.set(ref, confirmedOutcome(state));
      inFlight.delete(ref);
    } else if (state.state === 'in-flight' && !settled.has(ref)) {
      const sentAt = Date.parse(state.at);
      const prev = inFlight.get(ref);
      // Unreadable times cannot bound the request: read back as late as possible.
      const at = Number.isNaN(sentAt) ? Number.POSITIVE_INFINITY : sentAt;
      inFlight.set(ref, { payout, sentAt: Math.max(at, prev?.sentAt ?? at) });
    }
  };
  const conflicts: Problem[] = [];
  for (const c of candidates) {
    const mine = ours.get(c.ref);
    if (mine === undefined) continue;
    if (c.runId === undefined) {
      note(c.ref, c.state, mine.payout);
      continue;
    }
    if (c.hash !== undefined && c.hash !== mine.hash) {
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
    note(c.ref, c.state, mine.payout);
  }
  if (conflicts.length) throw new InputError(conflicts);
  return { settled, inFlight };
}

/** Applies a read-back of in-flight payouts to the prior state and the journal. */
export function applyReadBack(prior: PriorState, r: ReadBackResult, journal: RunJournal): void {
  const found: Array<{ ref: string; status: string; transaction_id?: string; message?: string }> =
    [];
  const notFound: string[] = [];
  const unknown: string[] = [];
  for (const [ref, o] of r.outcomes) {
    if (o.kind === 'found') found.push({ ref, ...fromRecord(o.record) });
    else if (o.kind === 'other-payout') found.push({ ref, status: 'failed', message: o.why });
    else if (o.kind === 'not-found') notFound.push(ref);
    else unknown.push(ref);
  }
  if (found.length) journal.recordOutcome(-1, found);
  for (const { ref, ...outcome } of found) {
    prior.settled.set(ref, outcome);
    prior.inFlight.delete(ref);
  }
  if (notFound.length) journal.recordNotApplied(-1, notFound, 'not found when read back');
  for (const ref of notFound) prior.inFlight.delete(ref);
  if (unknown.length) {
    journal.recordUnknown(unknown, 'could not be read back');
    throw (
      r.fatal ??
      new OutcomeUnknownError(
        `${unknown.length} payout${unknown.length === 1 ? '' : 's'} of an earlier attempt may have been sent, and could not be read back from the service; nothing new was sent: run the same command again when the service answers`,
        unknown,
      )
    );
  }
}
