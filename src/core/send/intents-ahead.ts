import type { Clock } from '../../clock.js';
import type { RunState } from '../../state/index.js';

/** What an intent names: a chunk's rows, and its references should it be withdrawn. */
export interface IntentItem {
  row: number;
  payout: { reference_id: string };
}

/** An intent written ahead for a chunk that waits for its place: its request id and commit. */
interface Written {
  req: number;
  at: number;
  committed: Promise<void>;
}

/** A chunk waiting for its place in the pace, with its intent once written ahead. */
export interface AheadTicket<T extends IntentItem = IntentItem> {
  readonly chunk: T[];
  written?: Written;
}

/** What writing intents ahead needs. */
export interface IntentsAheadDeps {
  journal: Pick<RunState, 'recordIntent' | 'recordNotApplied'>;
  clock: Clock;
  /** The first request id to use. */
  firstReq: number;
  /**
   * An intent written ahead and older than this when its place comes is withdrawn and written
   * afresh, so the read-back after a crash still waits the quiet time after the send.
   */
  maxAgeMs: number;
  /** Whether no new request may start: then nothing more is written ahead. */
  stopping: () => boolean;
  /** How many waiting chunks may have an intent at once (0: none is written ahead). */
  ahead: number;
}

/**
 * The request ids of a run and their intents. Each attempt's intent is committed before
 * `reserve` returns; while chunks wait for their place, the oldest `ahead` of them get theirs
 * written early, so a freed place sends at once rather than after a commit. A crash leaves at
 * most that many more payouts to read back than the requests in flight.
 */
export class IntentsAhead<T extends IntentItem = IntentItem> {
  private nextReq: number;
  /** Waiting chunks with no intent yet, oldest first. */
  private readonly unwritten: Array<AheadTicket<T>> = [];
  /** Waiting chunks whose intent is written (or being written). */
  private writtenCount = 0;
  private scheduled = false;

  constructor(private readonly deps: IntentsAheadDeps) {
    this.nextReq = deps.firstReq;
  }

  /** A chunk begins to wait for its place: its intent may be written while it waits. */
  waiting(chunk: T[]): AheadTicket<T> {
    const ticket: AheadTicket<T> = { chunk };
    this.unwritten.push(ticket);
    this.schedule();
    return ticket;
  }

  /** The chunk's place came: nothing more is written for it, and another chunk may take its turn. */
  placed(ticket: AheadTicket<T>): void {
    const k = this.unwritten.indexOf(ticket);
    if (k !== -1) this.unwritten.splice(k, 1);
    if (ticket.written) {
      this.writtenCount -= 1;
      this.schedule();
    }
  }

  /**
   * The request id of a chunk's attempt, its intent committed: the one written ahead for the
   * ticket when still fresh, otherwise a new one (a stale one is withdrawn: nothing was sent).
   */
  async reserve(items: T[], ticket?: AheadTicket<T>): Promise<number> {
    const written = ticket?.written;
    if (written) {
      ticket.written = undefined;
      await written.committed;
      if (this.deps.clock.now() - written.at <= this.deps.maxAgeMs) return written.req;
      this.notApplied(written.req, items, 'its intent was written too long before it was sent');
    }
    const req = this.nextReq++;
    await this.deps.journal.recordIntent(req, rowsOf(items));
    return req;
  }

  /** Withdraws the intent written ahead for a chunk that will not be sent, once it is committed. */
  async withdraw(ticket: AheadTicket<T>, why: string): Promise<void> {
    const written = ticket.written;
    if (!written) return;
    ticket.written = undefined;
    await written.committed;
    this.notApplied(written.req, ticket.chunk, why);
  }

  /** Withdraws it at once: the run ends now, and the journal commits in order anyway. */
  withdrawNow(ticket: AheadTicket<T>, why: string): void {
    const written = ticket.written;
    if (!written) return;
    ticket.written = undefined;
    this.notApplied(written.req, ticket.chunk, why);
  }

  /**
   * Writes intents in the next check phase, after the requests started now: undici writes a
   * request on a reused connection there, and the commit would otherwise come first.
   */
  private schedule(): void {
    if (this.scheduled || this.deps.ahead <= 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.writeAhead();
    });
  }

  /** Writes the intent of the oldest waiting chunks, up to `ahead` of them. */
  private writeAhead(): void {
    while (this.writtenCount < this.deps.ahead && this.unwritten.length && !this.deps.stopping()) {
      const ticket = this.unwritten.shift()!;
      const req = this.nextReq++;
      const committed = this.deps.journal.recordIntent(req, rowsOf(ticket.chunk));
      // A failed commit is the chunk's error when it comes to be sent.
      committed.catch(() => {});
      ticket.written = { req, at: this.deps.clock.now(), committed };
      this.writtenCount += 1;
    }
  }

  /** Frees the payouts of an intent whose request was never sent. */
  private notApplied(req: number, items: T[], why: string): void {
    const refs = items.map((i) => i.payout.reference_id);
    this.deps.journal.recordNotApplied(req, refs, `not sent: ${why}`);
  }
}

/** The rows of an intent. */
function rowsOf(items: IntentItem[]): number[] {
  return items.map((i) => i.row);
}
