import type { Clock } from '../clock.js';

/**
 * How many requests go to the service at once, and how fast: the pace the service allows.
 *
 * Concurrency follows AIMD, as TCP's congestion window: it starts at `initial`, grows by two
 * per answer until the first sign of overload (slow start), then by one per window of answers,
 * and shrinks multiplicatively on a 429 or when answers take clearly longer than the fastest
 * seen (a latency signal, as Netflix's Vegas and Gradient limits use). A 429 that ends slow
 * start brings the limit down to what the service took at once (the requests sent before the
 * refused ones and not answered yet), and one decrease answers for every request started
 * before it, as TCP reacts once per round trip. A 429 also pauses every
 * new request until its Retry-After, and then paces starts at the rate measured when it came,
 * raised a little each second (as the AWS SDKs' adaptive mode sets its token bucket's rate),
 * so a rate-limited service is met at its rate instead of being hit again and again.
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
  /** No answer, or a failure that says nothing about load. */
  | { kind: 'failed' };

/** One request's place in the pace, from acquire to release. */
export interface Permit {
  startedAt: number;
  /** Requests in flight when it started, itself included. */
  inFlight: number;
  /** Its place in the order requests were sent (0 before it is sent). */
  sent: number;
}

/**
 * Slow start grows the limit by this much per answer: it triples each round trip, so a send
 * reaches 16 in flight in two round trips from 4 (TCP's doubling took three).
 */
const SLOW_START_STEP = 2;
/** A latency this many times the fastest seen, over a window of answers, means a queue builds. */
const LATENCY_RISE = 2;
/** Multiplicative decrease: a 429 or a latency rise keeps this share of the limit. */
const BACKOFF = 0.8;
/** The longest pause a Retry-After may impose. */
const MAX_PAUSE_MS = 30_000;
/** The paced rate starts this far below the rate measured at a 429... */
const RATE_MARGIN = 0.95;
/** ...and grows by this share each second without a 429... */
const RATE_GROWTH = 0.005;
/** ...after climbing back at this share a second when it started lower. */
const RECOVERY = 0.2;
/** A rate measured over less than half a window starts this much lower. */
const SHORT_WINDOW_MARGIN = 0.75;
/** The window over which the rate of answers is measured. */
const RATE_WINDOW_MS = 2_000;

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
  /** The paced rate after a 429 (undefined: not paced): where it starts, its ceiling, since when. */
  private rate: { start: number; ceiling: number; since: number; sure: boolean } | undefined;
  /** When the first request started. */
  private startedAt = Number.POSITIVE_INFINITY;
  private nextStart = 0;
  /** Times of recent answers, for the rate measured at a 429. */
  private readonly answeredAt: number[] = [];
  /** The end of the pause before the current one: answers before it do not tell the rate. */
  private pausedUntilBefore = 0;
  /** The limit the last decrease set: a 429 within it says the rate, not the count, binds. */
  private afterDecrease: number | undefined;
  /** Whether a start waited for the paced rate since the last 429: then the rate binds. */
  private waitedForRate = false;
  /** Requests sent so far, and those of them not answered yet (by their place). */
  private sentCount = 0;
  private readonly unanswered = new Set<number>();
  /** Whether a 429 holds new starts until the next answer (see `holding`). */
  private holdForAnswer = false;
  /** The limit when the last counted 429 came. */
  private throttledAt = Number.POSITIVE_INFINITY;
  /** When the last decrease left slow start: half the limit before it, the least it may keep. */
  private exitFloor: number | undefined;
  private peak: number;
  private throttles = 0;
  private readonly clock: Clock;

  constructor(private readonly opts: PaceOptions) {
    this.limitValue = Math.max(1, Math.min(opts.initial, opts.max));
    this.peak = this.limit;
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

  /** The highest limit reached, and the number of 429s, for the run's record. */
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
    return { startedAt: await this.turn(), inFlight, sent: 0 };
  }

  /**
   * For another attempt of a request whose last one provably did not apply: its place is
   * free until `after` (its backoff), then it queues again behind the limit (which may have
   * shrunk), any pause and the paced rate.
   */
  async again(permit: Permit, after?: Promise<void>): Promise<void> {
    this.release();
    await after;
    Object.assign(permit, await this.acquire());
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
    if (how.kind === 'ok' || this.unanswered.size === 0) {
      this.holdForAnswer = false;
      this.wake();
    }
    if (how.kind !== 'ok') return;
    this.answeredAt.push(now);
    while (this.answeredAt.length && this.answeredAt[0]! < now - RATE_WINDOW_MS) {
      this.answeredAt.shift();
    }
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
        this.startedAt = Math.min(this.startedAt, now);
        return now;
      }
      if (this.nextStart > this.pauseUntil) this.waitedForRate = true;
      await this.clock.sleep(at - now);
    }
  }

  /**
   * Milliseconds between request starts at the paced rate (0 when not paced). The rate climbs
   * back fast (RECOVERY a second) to just under the rate measured at the last 429, then probes
   * beyond it slowly (RATE_GROWTH a second), as CUBIC does around its last maximum; a rate
   * measured over a short window may be far below the service's, so it keeps climbing fast.
   */
  private interval(now: number): number {
    if (!this.rate) return 0;
    const { start, ceiling, since, sure } = this.rate;
    const t = Math.max(0, now - since) / 1000;
    const climb = start < ceiling ? Math.log(ceiling / start) / Math.log(1 + RECOVERY) : 0;
    const perSecond =
      t < climb
        ? start * (1 + RECOVERY) ** t
        : Math.max(start, ceiling) * (1 + (sure ? RATE_GROWTH : RECOVERY)) ** (t - climb);
    return 1000 / perSecond;
  }

  /**
   * A 429: pause until its Retry-After, shrink the limit, and pace starts when the rate is
   * what binds: a 429 to a request started with no more in flight than the last decrease
   * allowed (fewer in flight did not help, so the service counts requests a second), or one
   * that came while starts were already waiting for the paced rate. A 429 to a request
   * started before the last decrease only tells how many the service took.
   */
  private throttled(now: number, permit: Permit, retryAfterMs: number | undefined): void {
    this.throttles += 1;
    this.pausedUntilBefore = this.pauseUntil;
    if (retryAfterMs !== undefined) {
      this.pauseUntil = Math.max(this.pauseUntil, now + Math.min(retryAfterMs, MAX_PAUSE_MS));
    }
    const took = this.sentBefore(permit);
    this.holdForAnswer = true;
    if (permit.startedAt < this.decreasedAt) {
      this.tookFewer(took);
      return;
    }
    const safe = this.afterDecrease;
    const rateBinds = this.rate
      ? this.waitedForRate
      : safe !== undefined && permit.inFlight <= safe;
    this.waitedForRate = false;
    const measured = rateBinds ? this.measuredRate(now) : undefined;
    if (measured !== undefined) {
      // Refused at the paced rate: that rate was too high, whatever a burst let through.
      const paced = this.rate ? 1000 / this.interval(now) : Number.POSITIVE_INFINITY;
      const ceiling = Math.min(measured.perSecond, paced) * RATE_MARGIN;
      // A short window may hold a burst the service allowed: start lower, climb back fast.
      const start = measured.full ? ceiling : ceiling * SHORT_WINDOW_MARGIN;
      this.rate = { start, ceiling, since: Math.max(now, this.pauseUntil), sure: measured.full };
      this.opts.onChange?.(this.limit, `pacing at ${start.toFixed(1)} requests a second`);
    }
    const why = `the service answered 429${retryAfterMs ? ` (Retry-After ${retryAfterMs} ms)` : ''}`;
    this.throttledAt = this.limit;
    this.decrease(why, took);
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

  /** Answers a second over the last window since any pause ended, if long enough to tell. */
  private measuredRate(now: number): { perSecond: number; full: boolean } | undefined {
    const from = Math.max(now - RATE_WINDOW_MS, this.pausedUntilBefore, this.startedAt);
    const times = this.answeredAt.filter((t) => t >= from);
    if (times.length < 2) return undefined;
    const span = Math.max(now - from, RATE_WINDOW_MS / 8);
    return { perSecond: (times.length * 1000) / span, full: span >= RATE_WINDOW_MS / 2 };
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
      this.peak = Math.max(this.peak, this.limit);
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
