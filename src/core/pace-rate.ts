/**
 * The rate a service allowed, learned at its 429s and probed upwards after clean time, apart
 * from the count of requests in flight (pace.ts), which binds on its own terms.
 */

/** The shortest span between two 429s over which the rate the service allowed is measured. */
const MIN_SPAN_MS = 50;
/** A rate measured over this long or more is held; a shorter one is probed briskly. */
const SURE_SPAN_MS = 1_000;
/** Clean time after which a rate measured over a short span is probed. */
const UNSURE_PROBE_MS = 1_000;
/** Clean time after which a held rate is probed, doubled by each probe the service refuses... */
const PROBE_MS = 5_000;
/** ...up to this. */
const MAX_PROBE_MS = 60_000;
/** A probe raises the rate by this many requests a second, or by this share when more. */
const PROBE_STEP = 1;
const PROBE_SHARE = 0.05;
/** A 429 with no rate measured lowers the paced rate to this share. */
const RATE_BACKOFF = 0.9;

/** The rate the service allowed, learned at its 429s, and when to probe above it. */
interface Learned {
  perSecond: number;
  /** Measured over a long enough span to hold (else probed every UNSURE_PROBE_MS). */
  sure: boolean;
  /** When the rate was last set or raised: the clean time before a probe counts from here. */
  setAt: number;
  probeMs: number;
  /** Whether the last change raised the rate: a 429 now refuses the probe. */
  probing: boolean;
}

/** A request refused by a 429: when it went out, and its place in the order of sends. */
export interface Refused {
  startedAt: number;
  sent: number;
}

/** The rate the service allowed one run's requests (or one lookup's). */
export class LearnedRate {
  /** The rate the service allowed (undefined: starts are not paced). */
  private learned: Learned | undefined;
  /** The request of the last 429 that began an episode: the allowed rate counts from its send. */
  private anchor: { at: number; sent: number } | undefined;
  /** Places of the requests refused since the anchor's. */
  private refusedSent: number[] = [];

  /** Whether a rate was learned: starts are then paced. */
  get known(): boolean {
    return this.learned !== undefined;
  }

  /** Notes a request the service refused (its place), for the next measure. */
  refused(sent: number): void {
    this.refusedSent.push(sent);
  }

  /** A new episode of 429s begins at this refused request: the next measure counts from it. */
  anchorAt(at: number, sent: number): void {
    this.anchor = { at, sent };
    this.refusedSent = [];
  }

  /** A 429 that leaves the rate as it is: the clean time before a probe counts from `now`. */
  held(now: number): void {
    if (this.learned) this.learned.setAt = now;
  }

  /**
   * Milliseconds between request starts at the learned rate, undefined when none is. After
   * enough clean time the rate is probed upwards by a small step, never by a multiple, so a
   * service with a steady limit is asked for more seldom; `probed` is told the new rate.
   */
  interval(now: number, probed: (perSecond: number) => void): number | undefined {
    const l = this.learned;
    if (!l) return undefined;
    if (now - l.setAt >= (l.sure ? l.probeMs : UNSURE_PROBE_MS)) {
      l.perSecond += Math.max(PROBE_STEP, l.perSecond * PROBE_SHARE);
      l.setAt = now;
      l.probing = true;
      probed(l.perSecond);
    }
    return 1000 / l.perSecond;
  }

  /**
   * Keeps to the rate the service allowed: the requests it took between the last episode's
   * refused request and this one, over the time between them (a token bucket's rate, when
   * it was emptied at both). A refused probe doubles the clean time before the next. The
   * new rate, or undefined when none could be set.
   */
  learn(now: number, refused: Refused): number | undefined {
    const measured = this.allowedRate(refused);
    const l = this.learned;
    const paced = l?.perSecond ?? Number.POSITIVE_INFINITY;
    const perSecond = Math.min(measured?.perSecond ?? paced * RATE_BACKOFF, paced);
    if (!Number.isFinite(perSecond) || perSecond <= 0) return undefined;
    const probeMs = l ? (l.probing ? Math.min(l.probeMs * 2, MAX_PROBE_MS) : l.probeMs) : PROBE_MS;
    const sure = (measured?.spanMs ?? 0) >= SURE_SPAN_MS || (l?.sure ?? false);
    this.learned = { perSecond, sure, setAt: now, probeMs, probing: false };
    return perSecond;
  }

  /**
   * Requests a second the service took from the anchor's request to this one, if measurable;
   * half a request more, for the token that was refilling when this one was refused.
   */
  private allowedRate(permit: Refused): { perSecond: number; spanMs: number } | undefined {
    const a = this.anchor;
    if (!a || !permit.sent) return undefined;
    const spanMs = permit.startedAt - a.at;
    if (spanMs < MIN_SPAN_MS) return undefined;
    const refused = this.refusedSent.filter((s) => s > a.sent && s < permit.sent).length;
    const took = permit.sent - a.sent - 1 - refused;
    if (took < 1) return undefined;
    return { perSecond: ((took + 0.5) * 1000) / spanMs, spanMs };
  }
}
