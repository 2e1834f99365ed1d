import type { Clock } from '../clock.js';
import { LearnedRate } from './pace-rate.js';

/**
 * How many requests go to the service at once, and how fast: the pace the service allows.
 *
 * Concurrency follows AIMD, as TCP's congestion window: it starts at `initial`, grows by two
 * per answer until the first sign of overload (slow start), then by one per window of answers,
 * and shrinks multiplicatively on a 429, a 503 or when answers take clearly longer than the
 * fastest seen (a latency signal, as Netflix's Vegas and Gradient limits use). Slow start more
 * than doubles the limit each round trip: from 1 in flight, its fourth round trip carries 16.
 * A 429 that ends slow start brings the limit down to what the service took at once (the
 * requests sent before the refused ones and not answered yet), and one decrease answers for
 * every request started before it, as TCP reacts once per round trip.
 *
 * After a 429 no request starts until an answer comes back. Its Retry-After holds the refused
 * request (the engine waits it out); it holds every new request only when the service took
 * none since its last 429. When the rate is what binds, starts keep to the rate the service
 * allowed: the requests it took between two 429s over the time between them, which is a
 * token bucket's rate when both emptied it. That rate is held, and probed upwards by one
 * request a second (or 5%) after 5 s of clean answers, the wait doubled by each probe it
 * refuses, so a steady limit sees a few 429s a minute whatever its Retry-After says.
 */

/** What the pace is set up with. */
export interface PaceOptions {
  /** Requests in flight at the start. */
  initial: number;
  /** Requests in flight at most: --concurrency N, or --max-concurrency. */
  max: number;
  clock: Clock;
  /** Told about each change of the limit, with its reason (for --debug). */
  onChange?: (limit: number, why: string) => void;
}

/** How an answer went, for the pace. */
export type Answered =
  | { kind: 'ok' }
  /** 429: the service asked us to slow down. */
  | { kind: 'throttled'; retryAfterMs?: number }
  /** 503: the service says it is overloaded, without refusing by rate (the limit shrinks). */
  | { kind: 'overloaded' }
  /** No answer, or a failure that says nothing about load. */
  | { kind: 'failed' };

/** One request's place in the pace, from acquire to release. */
export interface Permit {
  startedAt: number;
  /** Requests in flight when it started, itself included. */
  inFlight: number;
  /** Its place in the order requests were sent (0 before it is sent). */
  sent: number;
  /** It holds no place: it stepped aside (see `stepAside`) or is done. */
  aside?: boolean;
}

/**
 * Slow start grows the limit by this much per answer: it triples each round trip, so a send
 * reaches 16 in flight in one round trip from its start of 8 (two from 4).
 */
const SLOW_START_STEP = 2;
/** A latency this many times the fastest seen, over a window of answers, means a queue builds. */
const LATENCY_RISE = 2;
/** Multiplicative decrease: a 429 or a latency rise keeps this share of the limit. */
const BACKOFF = 0.8;
/** The longest pause a Retry-After may impose. */
const MAX_PAUSE_MS = 30_000;
/** The pace of one run's requests (or one lookup's). */
export class Pace {
  private limitValue: number;
  private active = 0;
  private readonly waiters: Array<() => void> = [];
  private slowStart = true;
  private minLatency = Number.POSITIVE_INFINITY;
  private windowLatencies: number[] = [];
  /** Answers since the last decrease: at most one decrease per window. */
  private sinceDecrease = Number.POSITIVE_INFINITY;
  /** When the last decrease came: a 429 to a request started before it says nothing new. */
  private decreasedAt = Number.NEGATIVE_INFINITY;
  private pauseUntil = 0;
  /** The rate the service allowed, once learned (pace-rate.ts): starts then keep to it. */
  private readonly rate = new LearnedRate();
  private nextStart = 0;
  /** When the last episode of 429s began: a 429 to a request sent before belongs to it. */
  private episodeAt = Number.NEGATIVE_INFINITY;
  /** Answers without a 429 since that episode: the service is taking requests. */
  private okSinceEpisode = 0;
  /** The limit the last decrease set: a 429 within it says the rate, not the count, binds. */
  private afterDecrease: number | undefined;
  /** Whether a start waited for the paced rate since the last 429: then the rate binds. */
  private waitedForRate = false;
  /** Whether a 429 showed that the count of requests in flight, not their rate, binds. */
  private countBinds = false;
  /** Requests sent so far, and those of them not answered yet (by their place). */
  private sentCount = 0;
  private readonly unanswered = new Set<number>();
  /** Whether a 429 holds new starts until the next answer (see `holding`). */
  private holdForAnswer = false;
  /** The limit when the last counted 429 came. */
  private throttledAt = Number.POSITIVE_INFINITY;
  /** When the last decrease left slow start: half the limit before it, the least it may keep. */
  private exitFloor: number | undefined;
  /** The most requests in flight at once, as measured (not the limit, which may never fill). */
  private peak = 0;
  private throttles = 0;
  private readonly clock: Clock;

  constructor(private readonly opts: PaceOptions) {
    this.limitValue = Math.max(1, Math.min(opts.initial, opts.max));
    this.clock = opts.clock;
  }

  /** Requests allowed in flight now. */
  get limit(): number {
    return Math.max(1, Math.floor(this.limitValue));
  }

  /** Requests in flight now. */
  get inFlight(): number {
    return this.active;
  }

  /** The most requests in flight at once, and the number of 429s, for the run's record. */
  get record(): { peakConcurrency: number; throttled: number } {
    return { peakConcurrency: this.peak, throttled: this.throttles };
  }

  /** Waits for a place (within the limit, after any pause, at the paced rate) and takes it. */
  async acquire(): Promise<Permit> {
    while (this.active >= this.limit || this.holding) {
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
    this.active += 1;
    const inFlight = this.active;
    this.peak = Math.max(this.peak, inFlight);
    return { startedAt: await this.turn(), inFlight, sent: 0, aside: false };
  }

  /**
   * For another attempt of a request whose last one provably did not apply: its place is
   * free until `after` (its backoff), then it queues again behind the limit (which may have
   * shrunk), any pause and the paced rate.
   */
  async again(permit: Permit, after?: Promise<void>): Promise<void> {
    this.done(permit);
    await after;
    Object.assign(permit, await this.acquire());
  }

  /**
   * Gives the place of an answered request back while it waits for something other than the
   * service (a read-back's quiet time), so the rest of the send goes on; `again` or `regain`
   * takes a place anew.
   */
  stepAside(permit: Permit): void {
    if (permit.aside) return;
    permit.aside = true;
    this.release();
  }

  /** Takes a place again for a permit that stepped aside; nothing if it holds one. */
  async regain(permit: Permit): Promise<void> {
    if (permit.aside) Object.assign(permit, await this.acquire());
  }

  /** Gives the permit's place back unless it already stepped aside. */
  done(permit: Permit): void {
    if (permit.aside) return;
    permit.aside = true;
    this.release();
  }

  /** Marks the moment a request goes out under a permit: its latency counts from here. */
  sending(permit: Permit): void {
    permit.startedAt = this.clock.now();
    permit.sent = ++this.sentCount;
    this.unanswered.add(permit.sent);
  }

  /** Records how a request's answer went, and adjusts the pace. */
  answered(permit: Permit, how: Answered): void {
    const now = this.clock.now();
    this.sinceDecrease += 1;
    this.unanswered.delete(permit.sent);
    if (how.kind === 'throttled') this.throttled(now, permit, how.retryAfterMs);
    if (how.kind === 'overloaded') this.decrease('the service answered 503 (overloaded)');
    if (how.kind === 'ok' || this.unanswered.size === 0) {
      this.holdForAnswer = false;
      this.wake();
    }
    if (how.kind !== 'ok') return;
    this.okSinceEpisode += 1;
    this.latency(now - permit.startedAt);
  }

  /** Gives the place back. */
  release(): void {
    this.active -= 1;
    this.wake();
  }

  /** Waits for the end of a pause and for the paced interval; returns the start time. */
  private async turn(): Promise<number> {
    for (;;) {
      const now = this.clock.now();
      const at = Math.max(this.pauseUntil, this.nextStart);
      if (now >= at) {
        this.nextStart = now + this.interval(now);
        return now;
      }
      if (this.nextStart > this.pauseUntil) this.waitedForRate = true;
      await this.clock.sleep(at - now);
    }
  }

  /** Milliseconds between request starts: at the learned rate (LearnedRate), else spread. */
  private interval(now: number): number {
    const probed = (perSecond: number) =>
      this.opts.onChange?.(this.limit, `probing at ${perSecond.toFixed(1)} requests a second`);
    return this.rate.interval(now, probed) ?? this.spread();
  }

  /**
   * After a 429 and before a rate is learned, starts are spread over a round trip (the limit's
   * worth per fastest latency) rather than sent together as answers come back: a token bucket
   * emptied by the 429 refills evenly, so a burst would meet it empty again. Once a 429 shows
   * that the count binds (it came with more in flight than the last decrease allowed), they
   * go as places free again.
   */
  private spread(): number {
    if (this.episodeAt === Number.NEGATIVE_INFINITY || this.countBinds) return 0;
    if (!Number.isFinite(this.minLatency)) return 0;
    return this.minLatency / this.limit;
  }

  /**
   * A 429. New starts wait for the Retry-After when the service took nothing since the last
   * episode of 429s and holds nothing now (a 429 to everything); otherwise the refused request
   * alone waits for it (the caller's part). One that refuses a request sent before the episode
   * it belongs to began only tells how many the service took. Otherwise a new episode: new
   * starts wait for an answer, the limit shrinks, and when the rate binds (fewer in flight did
   * not help, or starts already waited for the paced rate) starts keep to the rate the service
   * allowed since the last episode.
   */
  private throttled(now: number, permit: Permit, retryAfterMs: number | undefined): void {
    this.throttles += 1;
    this.rate.refused(permit.sent);
    const took = this.sentBefore(permit);
    this.holdForAnswer = true;
    // Refused with nothing taken since the last episode and nothing else in flight.
    if (retryAfterMs !== undefined && this.okSinceEpisode === 0 && this.unanswered.size === 0) {
      this.pauseUntil = Math.max(this.pauseUntil, now + Math.min(retryAfterMs, MAX_PAUSE_MS));
    }
    if (permit.startedAt < this.episodeAt) {
      if (permit.startedAt < this.decreasedAt) this.tookFewer(took);
      return;
    }
    this.episodeAt = now;
    this.okSinceEpisode = 0;
    const safe = this.afterDecrease;
    const rateBinds = this.rate.known
      ? this.waitedForRate
      : safe !== undefined && permit.inFlight <= safe;
    this.waitedForRate = false;
    if (!this.rate.known && safe !== undefined && !rateBinds) this.countBinds = true;
    if (rateBinds) this.learn(now, permit);
    else this.rate.held(now);
    this.rate.anchorAt(Math.max(permit.startedAt, this.pauseUntil), permit.sent);
    const why = `the service answered 429${retryAfterMs ? ` (Retry-After ${retryAfterMs} ms)` : ''}`;
    this.throttledAt = this.limit;
    this.decrease(why, took);
  }

  /** Keeps to the rate the service allowed up to this refused request (LearnedRate.learn). */
  private learn(now: number, permit: Permit): void {
    const perSecond = this.rate.learn(now, permit);
    if (perSecond === undefined) return;
    this.opts.onChange?.(this.limit, `pacing at ${perSecond.toFixed(1)} requests a second`);
  }

  /**
   * What the service held when it refused this request: those sent before it and not
   * answered yet (an answer already received does not count, unlike the count in flight).
   */
  private sentBefore(permit: Permit): number {
    if (!permit.sent) return permit.inFlight - 1;
    let n = 0;
    for (const sent of this.unanswered) if (sent < permit.sent) n += 1;
    return n;
  }

  /**
   * A 429 from the round before the last decrease: when the decrease left slow start, the
   * limit comes down to what the service took in that round (but by half at most).
   */
  private tookFewer(took: number): void {
    if (this.exitFloor === undefined || took >= this.limit) return;
    const before = this.limit;
    this.limitValue = Math.max(1, took, this.exitFloor);
    if (this.limit === before) return;
    this.afterDecrease = this.limit;
    this.opts.onChange?.(this.limit, `the service took ${took} at once`);
  }

  /** A latency sample: grow while answers stay fast, shrink when a queue builds. */
  private latency(ms: number): void {
    this.minLatency = Math.min(this.minLatency, Math.max(ms, 1));
    this.windowLatencies.push(ms);
    if (this.windowLatencies.length >= this.limit) {
      const average = this.windowLatencies.reduce((a, b) => a + b, 0) / this.windowLatencies.length;
      this.windowLatencies = [];
      if (average > LATENCY_RISE * this.minLatency + 5) {
        this.decrease(
          `answers slowed to ${Math.round(average)} ms (fastest ${Math.round(this.minLatency)} ms)`,
        );
        return;
      }
    }
    this.grow();
  }

  /**
   * Additive increase: SLOW_START_STEP per answer in slow start, one per window after, and a
   * quarter of that just below the limit of the last 429, as CUBIC lingers near its last
   * maximum: a service that refuses the eleventh request is asked for it seldom.
   */
  private grow(): void {
    if (this.limitValue >= this.opts.max) return;
    const before = this.limit;
    const near = this.limitValue + 1 >= this.throttledAt;
    const step = this.slowStart ? SLOW_START_STEP : 1 / this.limitValue / (near ? 4 : 1);
    this.limitValue = Math.min(this.opts.max, this.limitValue + step);
    if (this.limit !== before) {
      this.opts.onChange?.(this.limit, 'answers came back without 429s or slowing');
      this.wake();
    }
  }

  /**
   * Multiplicative decrease, at most once per window of answers, to `took` (what a 429 showed
   * the service held at once) when given. Leaving slow start, the limit overshot by up to a
   * window and may halve, as TCP's does; after, it shrinks by BACKOFF at most.
   */
  private decrease(why: string, took?: number): void {
    const leaving = this.slowStart;
    this.slowStart = false;
    if (this.sinceDecrease < this.limit) return;
    this.sinceDecrease = 0;
    this.decreasedAt = this.clock.now();
    this.exitFloor = leaving ? this.limitValue * 0.5 : undefined;
    this.windowLatencies = [];
    const before = this.limit;
    // A 429 says how many the service held: keep those, but shrink by BACKOFF at most.
    const target = leaving
      ? Math.max(took ?? 0, this.limitValue * 0.5)
      : Math.max(this.limitValue * BACKOFF, Math.min(took ?? 0, this.limitValue - 1));
    this.limitValue = Math.max(1, Math.min(this.limitValue, target));
    this.afterDecrease = this.limit;
    if (this.limit !== before) this.opts.onChange?.(this.limit, why);
  }

  /** Lets waiting acquirers in while there is room. */
  private wake(): void {
    while (this.waiters.length && this.active < this.limit && !this.holding) {
      this.waiters.shift()!();
    }
  }

  /**
   * After a 429, no request starts until an answer comes back (or none is left to come): the
   * service is full now, and an answer is what frees a place there, as acks clock TCP.
   */
  private get holding(): boolean {
    return this.holdForAnswer && this.unanswered.size > 0;
  }
}
