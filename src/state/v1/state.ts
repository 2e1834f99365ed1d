import type { OutcomeResult } from '../outcome-result.js';
import type { JournalRecord, OutcomeTuple } from './records.js';

/** What a v1 journal says about one reference. */
export type RefState =
  | ({ state: 'confirmed'; req: number } & Omit<OutcomeResult, 'ref'>)
  /** `at`: when the request that may carry it was sent (at the latest), ISO 8601. */
  | { state: 'in-flight'; req: number; hash: string; at: string }
  | { state: 'free' };

/** What the table keeps per reference. */
export interface TrackedRef {
  state: RefState;
  /** Payout hash of the latest intent, kept after the reference is confirmed or freed. */
  hash?: string;
  /** Whether an intent, outcome or unknown named the reference (not only a not_applied). */
  sent: boolean;
}

/** The confirmed state an outcome tuple establishes, or undefined when it carries no status. */
export function confirmedFrom(req: number, t: OutcomeTuple): RefState | undefined {
  const [, status, transactionId, charges, amount, currency, message] = t;
  if (typeof status !== 'string' || status === '') return undefined;
  const s: RefState = { state: 'confirmed', status, req };
  if (transactionId !== null) s.transaction_id = transactionId;
  if (charges !== null) s.charges = charges;
  if (amount !== null) s.amount = amount;
  if (currency !== null) s.currency = currency;
  if (message !== null) s.message = message;
  return s;
}

/**
 * Per-reference states of one journal, derived record by record. The latest intent or outcome
 * wins; a not_applied frees a reference only while the request it names (or any, for -1) is the
 * one in flight, and neither not_applied nor unknown ever downgrades a confirmed reference.
 */
export class RefTable {
  private readonly refs = new Map<string, TrackedRef>();
  /** Highest request id seen (0 when none). */
  lastRequestId = 0;
  /** Time of the latest record, for "updated at". */
  lastAt: string | undefined;

  /** `wants` limits the table to the references a caller cares about, to keep memory small. */
  constructor(private readonly wants?: (ref: string) => boolean) {}

  /** Forgets every reference (the request-id high-water mark is kept). */
  clear(): void {
    this.refs.clear();
  }

  /** The tracked state of a reference, if the journal names it. */
  get(ref: string): TrackedRef | undefined {
    return this.refs.get(ref);
  }

  /** Every tracked reference, in order of first appearance. */
  entries(): IterableIterator<[string, TrackedRef]> {
    return this.refs.entries();
  }

  /** Number of tracked references. */
  get size(): number {
    return this.refs.size;
  }

  /** Applies one record (the run header is ignored). */
  apply(rec: JournalRecord): void {
    if (rec.t === 'run') return;
    this.lastAt = rec.at;
    if (rec.t !== 'unknown' && rec.req > this.lastRequestId) this.lastRequestId = rec.req;
    switch (rec.t) {
      case 'intent':
        for (const [ref, hash] of rec.p) {
          if (this.skip(ref)) continue;
          this.refs.set(ref, {
            state: { state: 'in-flight', req: rec.req, hash, at: rec.at },
            hash,
            sent: true,
          });
        }
        return;
      case 'outcome':
        for (const tuple of rec.r) this.applyOutcome(rec.req, tuple, rec.at);
        return;
      case 'not_applied':
        for (const ref of rec.refs) this.applyNotApplied(rec.req, ref);
        return;
      case 'unknown':
        for (const ref of rec.refs) this.applyUnknown(ref, rec.at);
        return;
    }
  }

  /** Whether a reference is outside what the caller wants tracked. */
  private skip(ref: string): boolean {
    return this.wants !== undefined && !this.wants(ref);
  }

  /** An outcome with a status confirms the reference; one without leaves it as it was. */
  private applyOutcome(req: number, tuple: OutcomeTuple, at: string): void {
    const ref = tuple[0];
    if (this.skip(ref)) return;
    const prev = this.refs.get(ref);
    const confirmed = confirmedFrom(req, tuple);
    if (confirmed) {
      this.refs.set(ref, { state: confirmed, hash: prev?.hash, sent: true });
    } else if (!prev) {
      // A result without a status proves the service saw the payout, not what became of it.
      this.refs.set(ref, { state: { state: 'in-flight', req, hash: '', at }, sent: true });
    }
  }

  /**
   * Frees an in-flight reference when the request that did not apply is the one carrying it,
   * or when req is -1 (a read-back found no such payout, whatever request sent it).
   */
  private applyNotApplied(req: number, ref: string): void {
    if (this.skip(ref)) return;
    const prev = this.refs.get(ref);
    if (!prev) {
      this.refs.set(ref, { state: { state: 'free' }, sent: false });
      return;
    }
    // A later request may be carrying the reference by now, and a confirmed payout stays applied.
    if (prev.state.state === 'in-flight' && (req === -1 || prev.state.req === req)) {
      this.refs.set(ref, { ...prev, state: { state: 'free' } });
    }
  }

  /** An unknown outcome never frees or confirms anything: the reference is (still) in flight. */
  private applyUnknown(ref: string, at: string): void {
    if (this.skip(ref)) return;
    const prev = this.refs.get(ref);
    if (prev && prev.state.state !== 'free') return;
    // The intent's time when known; else this record's, which is later and so errs safe.
    this.refs.set(ref, {
      state: { state: 'in-flight', req: -1, hash: prev?.hash ?? '', at },
      hash: prev?.hash,
      sent: true,
    });
  }
}
