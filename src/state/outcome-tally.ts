/**
 * A run's counts, charge totals and one code byte per row, kept in memory as outcomes arrive
 * so that a summary never reads the database: apart from where outcomes are written and read
 * (outcomes.ts).
 */
import {
  type OutcomeCounts,
  outcomeKind,
  type PayoutOutcome,
  paidByRetry,
} from '../domain/outcome.js';
import {
  NOT_SENT as NOT_SENT_STATUS,
  OUTCOME_UNKNOWN as OUTCOME_UNKNOWN_STATUS,
  type StatusKind,
} from '../domain/statuses.js';

/** Status codes of a row (0: the run never reached the row). */
const SUCCESS = 1;
const PENDING = 2;
const NOT_SENT = 3;
/** Failed or canceled. */
const FAILED = 4;
/** The CLI's own "outcome unknown". */
const OUTCOME_UNKNOWN = 5;
/** A status the interface does not document. */
const UNDOCUMENTED = 6;
/** Canceled: failed to every rule (statusKind), counted apart only for the closing line. */
const CANCELED = 7;
const STATUS_BITS = 7;
const SENT_EARLIER = 8;
const HAS_CHARGES = 16;
/** The outcome is in `reports`, not the row's stated result in `results`. */
const REPORTED = 32;
/** Sent earlier, found at the service (reports.sent_earlier = 2). */
const FOUND_AT_SERVICE = 64;
/** Failed earlier and paid by its retry (retried_as; counted as a success). */
const PAID_BY_RETRY = 128;

/** Converts a charge the service sent into minor units of its currency (undefined: not exact). */
export type ChargeMinor = (currency: string, charges: number) => bigint | undefined;

/** The code of a status, by its kind. */
const STATUS_CODES: Record<StatusKind, number> = {
  success: SUCCESS,
  pending: PENDING,
  not_sent: NOT_SENT,
  failed: FAILED,
  outcome_unknown: OUTCOME_UNKNOWN,
  undocumented: UNDOCUMENTED,
};

/** The tally of one send of a run: a code byte per row, and the counts and charge totals. */
export class OutcomeTally {
  private codes = new Uint8Array(16);
  private readonly counts = [0, 0, 0, 0, 0, 0, 0, 0];
  private sentEarlier = 0;
  private foundAtService = 0;
  private paidByRetry = 0;
  private readonly chargeTotals = new Map<string, { rows: number; minor: bigint }>();
  /** Rows whose outcome is in `reports` (REPORTED), as set; 0 lets reads skip the table. */
  private reported = 0;

  constructor(private readonly chargeMinor: ChargeMinor) {}

  /** Number of rows the run reached (sent, queued or sent earlier). */
  get size(): number {
    let n = 0;
    for (const c of this.counts) n += c;
    return n;
  }

  /** Number of rows whose outcome is in `reports`. */
  get reportedRows(): number {
    return this.reported;
  }

  /** Whether a row has an outcome. */
  has(row: number): boolean {
    return row < this.codes.length && this.codes[row]! !== 0;
  }

  /** Whether a row's outcome is in `reports` rather than its stated result. */
  isReported(row: number): boolean {
    return row < this.codes.length && (this.codes[row]! & REPORTED) !== 0;
  }

  /**
   * Counts a row's outcome in place of the one it had (`old` gives that one, asked only when
   * it had charges); reported unless `stated`. Returns the outcome as counted: a row sent
   * earlier keeps that mark.
   */
  set(
    row: number,
    outcome: PayoutOutcome,
    stated: boolean,
    old: () => PayoutOutcome | undefined,
  ): PayoutOutcome {
    if (row >= this.codes.length) this.grow(row + 1);
    const prev = this.codes[row]!;
    let o = outcome;
    if (prev !== 0) {
      this.counts[prev & STATUS_BITS]! -= 1;
      if (prev & SENT_EARLIER) this.sentEarlier -= 1;
      if (prev & FOUND_AT_SERVICE) this.foundAtService -= 1;
      if (prev & PAID_BY_RETRY) this.paidByRetry -= 1;
      if (prev & HAS_CHARGES) {
        const before = old();
        if (before?.charges !== undefined) this.addCharges(before.currency, before.charges, -1);
      }
      if (prev & SENT_EARLIER && !o.sent_earlier) o = { ...o, sent_earlier: true };
    }
    // Counted by the one rule: a payout its retry paid is a success (outcomeKind).
    const kind = outcomeKind(o);
    let code = kind === 'failed' && o.status === 'canceled' ? CANCELED : STATUS_CODES[kind];
    this.counts[code]! += 1;
    if (paidByRetry(o)) {
      code |= PAID_BY_RETRY;
      this.paidByRetry += 1;
    }
    if (o.sent_earlier) {
      code |= SENT_EARLIER;
      this.sentEarlier += 1;
    }
    if (o.found_at_service) {
      code |= FOUND_AT_SERVICE;
      this.foundAtService += 1;
    }
    if (o.charges !== undefined && this.addCharges(o.currency, o.charges, 1)) code |= HAS_CHARGES;
    // A stated result is the outcome itself, unless the row was sent earlier as well.
    if (!stated || o.sent_earlier) code |= REPORTED;
    if ((code & REPORTED) !== (prev & REPORTED)) this.reported += code & REPORTED ? 1 : -1;
    this.codes[row] = code;
    return o;
  }
  /** Counts by status, as countOutcomes would make them. */
  countsOf(): OutcomeCounts {
    const n = this.counts;
    return {
      success: n[SUCCESS]!,
      pending: n[PENDING]!,
      failed: n[FAILED]! + n[CANCELED]!,
      canceled: n[CANCELED]!,
      unknown: n[OUTCOME_UNKNOWN]! + n[UNDOCUMENTED]!,
      notSent: n[NOT_SENT]!,
      sentEarlier: this.sentEarlier,
      foundAtService: this.foundAtService,
      paidByRetry: this.paidByRetry,
    };
  }

  /**
   * Rows that reached the service whose charges are not in the totals: none stated (a result
   * read back carries none, an unknown outcome has none) or not an exact amount.
   */
  chargesUnknownCount(): number {
    let n = 0;
    for (const code of this.codes) {
      const status = code & STATUS_BITS;
      if (status !== 0 && status !== NOT_SENT && !(code & HAS_CHARGES)) n += 1;
    }
    return n;
  }

  /** Charge totals per currency in minor units (of max(digits, 6)), for currencies with charges. */
  chargeEntries(): Array<{ currency: string; minor: bigint }> {
    return [...this.chargeTotals.entries()]
      .filter(([, t]) => t.rows > 0)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([currency, t]) => ({ currency, minor: t.minor }));
  }

  /** One status per kind present, for exitCodeForStatuses. */
  statusKinds(): string[] {
    const out: string[] = [];
    if (this.counts[SUCCESS]) out.push('success');
    if (this.counts[PENDING]) out.push('pending');
    if (this.counts[NOT_SENT]) out.push(NOT_SENT_STATUS);
    if (this.counts[FAILED] || this.counts[CANCELED]) out.push('failed');
    if (this.counts[OUTCOME_UNKNOWN]) out.push(OUTCOME_UNKNOWN_STATUS);
    // Stands for every undocumented status: exitCodeForStatuses treats them alike.
    if (this.counts[UNDOCUMENTED]) out.push('undocumented');
    return out;
  }

  /** Adds (sign 1) or takes back (-1) a charge; false when it is not an exact amount. */
  private addCharges(currency: string, charges: number, sign: 1 | -1): boolean {
    const minor = this.chargeMinor(currency, charges);
    if (minor === undefined) return false;
    const t = this.chargeTotals.get(currency);
    if (t) {
      t.rows += sign;
      t.minor += sign === 1 ? minor : -minor;
    } else this.chargeTotals.set(currency, { rows: 1, minor });
    return true;
  }

  /** Makes room for `rows` rows. */
  private grow(rows: number): void {
    let n = this.codes.length;
    while (n < rows) n *= 2;
    const codes = new Uint8Array(n);
    codes.set(this.codes);
    this.codes = codes;
  }
}
