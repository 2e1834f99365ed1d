import { count } from '../../output/display.js';
import type { Progress } from '../../output/output.js';
import type { Pace, Permit } from '../pace.js';

/**
 * Requests whose outcome is unknown wait aside: while their payouts wait out the quiet time
 * and are read back, their place in the pace serves the rest of the file. Nothing about the
 * payouts themselves changes: they are still read back before anything is decided about them.
 *
 * At most `most` requests wait aside at once; beyond that a request in doubt keeps its place,
 * as every request did before, so a service that fails everything does not see the whole
 * file sent while nothing is known of what it did.
 */
export class Aside {
  /** The permit and payout count of each request being settled, by request id. */
  private readonly settling = new Map<number, { permit: Permit; payouts: number }>();
  /** Payouts of requests waiting aside now, by request id. */
  private readonly waiting = new Map<number, number>();

  constructor(
    private readonly pace: Pace,
    private readonly most: number,
  ) {}

  /** Notes the permit of a request while its answer is settled. */
  track(req: number, permit: Permit, payouts: number): void {
    this.settling.set(req, { permit, payouts });
  }

  /** The request is settled: it no longer waits aside. */
  untrack(req: number): void {
    this.settling.delete(req);
    this.waiting.delete(req);
  }

  /**
   * The request waits for something other than the service (a quiet time, a read-back): it
   * gives its place back, unless `most` requests already wait aside.
   */
  stepAside(req: number): void {
    const s = this.settling.get(req);
    if (!s || this.waiting.has(req) || this.waiting.size >= this.most) return;
    this.waiting.set(req, s.payouts);
    this.pace.stepAside(s.permit);
  }

  /** Requests, and their payouts, waiting aside now. */
  get count(): { requests: number; payouts: number } {
    let payouts = 0;
    for (const n of this.waiting.values()) payouts += n;
    return { requests: this.waiting.size, payouts };
  }
}

/** The spinner's line of a send: payouts done, then what goes on now, payouts in doubt aside. */
export function sendingLine(
  done: number,
  total: number,
  now: { inFlight: number; inDoubt: number; perSecond: number },
): string {
  // Nothing in flight (a quiet time, a Retry-After): the line says so, with no stale rate.
  const activity = now.inFlight
    ? `${count(now.inFlight, 'request')} in flight, ${now.perSecond} payouts/s`
    : 'waiting';
  const doubt = now.inDoubt ? `, ${now.inDoubt} in doubt waiting to be read back` : '';
  return `Sending: ${done}/${count(total, 'payout')} done, ${activity}${doubt}`;
}

/** What the send's line reads from the engine as it is redrawn. */
export interface SendingState {
  /** Requests holding a place in the pace (some may be waiting with it). */
  inFlight: number;
  aside: { requests: number; payouts: number };
  /** Payouts per second so far, for `done` payouts. */
  rate(done: number): number;
}

/**
 * The spinner's line of a send, redrawn as payouts finish and as each wait starts and ends,
 * so a wait never shows the requests and the rate of before it as if they still went on.
 */
export class SendingLine {
  private done = 0;
  private waiting = 0;

  constructor(
    private readonly progress: Progress | undefined,
    private readonly total: number,
    private readonly state: () => SendingState,
  ) {}

  /** `done` payouts have their outcome. */
  advance(done: number): void {
    this.done = done;
    this.redraw();
  }

  /** A wait with its countdown on the line (Progress.wait), counted out of what is in flight. */
  wait(what: string, ms: number, line?: string): () => void {
    this.waiting += 1;
    const end = this.progress?.wait(what, ms, line) ?? (() => {});
    this.redraw();
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.waiting -= 1;
      end();
      this.redraw();
    };
  }

  private redraw(): void {
    if (!this.progress) return;
    const s = this.state();
    // A request waiting aside holds no place; one waiting in its place is not in flight.
    const held = Math.max(0, this.waiting - s.aside.requests);
    this.progress.update(
      sendingLine(this.done, this.total, {
        inFlight: Math.max(0, s.inFlight - held),
        inDoubt: s.aside.payouts,
        perSecond: s.rate(this.done),
      }),
    );
  }
}
