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

/** The spinner's line of a send: payouts done, requests in flight, payouts in doubt aside. */
export function sendingLine(
  done: number,
  total: number,
  now: { inFlight: number; inDoubt: number; perSecond: number },
): string {
  const s = now.inFlight === 1 ? '' : 's';
  const doubt = now.inDoubt ? `, ${now.inDoubt} in doubt waiting to be read back` : '';
  return `Sending: ${done}/${total} payouts done, ${now.inFlight} request${s} in flight, ${now.perSecond} payouts/s${doubt}`;
}
