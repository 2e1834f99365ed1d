import { backoffDelay } from '../../api/retry.js';
import type { CreateAnswer, CreateRequest, PayoutRequest } from '../../api/types.js';
import { type Clock, systemClock } from '../../clock.js';
import type { PayoutOutcome } from '../../domain/outcome.js';
import { OUTCOME_UNKNOWN } from '../../domain/statuses.js';
import { ApiError, NetworkError } from '../../errors.js';
import type { RunOutcomes } from '../../state/index.js';
import { Pace, type Permit } from '../pace.js';
import type { EngineDeps, EngineSettings, PendingPayout } from './options.js';
import { timingFor } from '../timing.js';
import { Aside } from './aside.js';
import { type AheadTicket, IntentsAhead } from './intents-ahead.js';
import { type ReadBackResult, readBack } from './readback.js';
import { payouts, type Queued, Settler } from './settle.js';
import { judgeExchange, paceSignal } from './verdict.js';

export { DEFAULT_SEND_RETRY } from './options.js';

/** See Timing.quietMs: the default when the caller gives none. */
const DEFAULT_QUIET_MS = timingFor(undefined).quietMs;

/**
 * Chunks whose intent is written while they wait for a place, so that a freed place sends at
 * once rather than after a commit: a crash leaves at most this many more to read back.
 */
const INTENTS_AHEAD = 2;
/**
 * An intent written ahead and older than this share of the quiet time is withdrawn and written
 * afresh when its place comes, so the read-back after a crash still waits the quiet time after
 * the send, less at most this share of its margin beyond the request's deadline.
 */
const INTENT_MAX_AGE_SHARE = 1 / 50;
/** Requests in doubt that may wait aside at once (or the most in flight, when more). */
const ASIDE_AT_LEAST = 4;

/**
 * Sends payouts in chunks, a bounded number at a time, with the journal written ahead of
 * every request. What an answer proves is decided by verdict.ts; a payout whose outcome it
 * leaves open is read back by reference before anything else happens to it.
 */
export class SendEngine {
  /** References whose outcome could not be established. */
  readonly unknown: string[] = [];
  /** The error that stopped the run early, if any. */
  fatal?: Error;
  /** Batch references the service reported. */
  readonly batchReferences = new Set<string>();
  /** The pace of create requests; read-backs have their own. */
  readonly pace: Pace;
  /** Requests in doubt that gave their place back while they are read back. */
  readonly aside: Aside;
  private chunkSize: number;
  private readonly running = new Set<Promise<void>>();
  private buffer: Queued[] = [];
  /** Rows numbered so far: each enqueue or addSentEarlier takes the next. */
  private rows = 0;
  /** Full chunks waiting for a request slot, oldest first (each settles when it starts). */
  private readonly waitingChunks: Array<Promise<void>> = [];
  /** The request ids and their intents, some written while their chunks wait. */
  private readonly intents: IntentsAhead<Queued>;
  /** What a request's verdict proves, recorded, and what follows it. */
  private readonly settler: Settler;
  private requestsDone = 0;
  private payoutsDone = 0;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly quietMs: number;
  /** Chunks past their place in the pace, until settled: their payouts may be at the service. */
  private readonly sendingChunks = new Set<Queued[]>();
  /** Full chunks still waiting for their place. */
  private readonly waiting = new Set<AheadTicket<Queued>>();
  /** Set when the run stopped waiting for its requests ("finish now"); who waits for that. */
  private abandoned = false;
  private readonly onAbandon = new Set<() => void>();

  constructor(
    private readonly deps: EngineDeps,
    private readonly settings: EngineSettings,
  ) {
    if (deps.outcomes !== deps.journal.outcomes) {
      throw new Error("the engine's outcome store must be its journal's");
    }
    this.chunkSize = Math.max(1, settings.chunkSize);
    this.clock = deps.clock ?? systemClock;
    const onChange = deps.paceChanged;
    this.pace = new Pace({ ...settings.concurrency, clock: this.clock, onChange });
    this.aside = new Aside(this.pace, Math.max(ASIDE_AT_LEAST, settings.concurrency.max));
    this.random = deps.random ?? Math.random;
    this.quietMs = settings.quietMs ?? DEFAULT_QUIET_MS;
    this.intents = new IntentsAhead({
      journal: deps.journal,
      clock: this.clock,
      firstReq: deps.journal.lastRequestId + 1,
      maxAgeMs: this.quietMs * INTENT_MAX_AGE_SHARE,
      stopping: () => this.stopping,
      ahead: INTENTS_AHEAD,
    });
    this.settler = this.newSettler();
    deps.interrupt.addEventListener('abort', () => this.stoppingNotice(), { once: true });
    // Without a finish-now signal, never: the run waits for every request.
    if (deps.finishNow?.aborted) this.abandoned = true;
    else deps.finishNow?.addEventListener('abort', () => this.abandon(), { once: true });
  }

  /** The settle steps, over the engine's dependencies and its run. */
  private newSettler(): Settler {
    const { deps, clock, quietMs, aside } = this;
    const readPace = new Pace({ initial: 4, max: 16, clock });
    const maxRetryAfterMs = this.settings.retry.maxRetryAfterMs;
    return new Settler(
      { ...deps, clock, quietMs, aside, readPace, maxRetryAfterMs },
      {
        unknown: this.unknown,
        batchReferences: this.batchReferences,
        abandoned: () => this.abandoned,
        fail: (err) => {
          this.fatal ??= err;
        },
        shrinkChunks: (size) => {
          if (size >= this.chunkSize) return false;
          this.chunkSize = size;
          return true;
        },
        setOutcome: (item, o) => this.setOutcome(item, o),
      },
    );
  }

  /**
   * Ends the run now: payouts whose request may be out are in doubt (the next run reads them
   * back), those still waiting are not sent, and nothing the requests later bring is recorded.
   */
  private abandon(): void {
    this.abandoned = true;
    const store = this.deps.outcomes;
    const doubt = [...this.sendingChunks].flat().filter((i) => !store.has(i.row));
    try {
      if (doubt.length) {
        const why = 'the run was stopped at once while its request was in flight';
        const refs = doubt.map((i) => i.payout.reference_id);
        this.deps.journal.recordUnknown(refs, why);
        this.unknown.push(...refs);
        for (const i of doubt)
          this.setOutcome(i, { status: OUTCOME_UNKNOWN, message: `outcome unknown: ${why}` });
      }
      for (const w of this.waiting) {
        this.intents.withdrawNow(w, 'the run stopped before it was sent');
        this.settleLeftovers(w.chunk);
      }
    } catch (err) {
      this.fatal ??= err instanceof Error ? err : new Error(String(err));
    }
    this.settleLeftovers(this.buffer);
    this.buffer = [];
    for (const told of this.onAbandon) told();
    this.onAbandon.clear();
  }

  /** The promise or the run's end-now, whichever first (a race kept two reactions a chunk). */
  private untilAbandoned(p: Promise<unknown>): Promise<void> {
    if (this.abandoned) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      this.onAbandon.add(resolve);
      p.finally(() => this.onAbandon.delete(resolve)).then(() => resolve(), reject);
    });
  }

  /** Tells the operator, at the first Ctrl-C, what the run still waits for and how to stop it. */
  private stoppingNotice(): void {
    const n = this.running.size;
    if (n === 0) return;
    const requests = `${n} request${n === 1 ? '' : 's'}`;
    const again = this.deps.interactive
      ? `. Press Ctrl-C again to stop at once: the next run then reads ${n === 1 ? 'it' : 'them'} back before sending anything`
      : '';
    this.deps.warn(
      `stopping: no new request starts; waiting for the ${requests} in flight to finish${again}`,
    );
  }

  /** Every payout the run reached, in input order, with its outcome. */
  get outcomes(): RunOutcomes {
    return this.deps.outcomes;
  }

  /** Whether no new request may start: interrupted, or a fatal error happened. */
  get stopping(): boolean {
    return this.deps.interrupt.aborted || this.fatal !== undefined;
  }

  /**
   * Records the outcome of a payout this run does not send (sent earlier, not reached, or in
   * doubt from an earlier attempt), as the next row; one in doubt is read back next time.
   */
  record(p: PayoutRequest, o: Partial<PayoutOutcome> & { status: string }): void {
    if (o.status === OUTCOME_UNKNOWN) this.unknown.push(p.reference_id);
    this.deps.outcomes.set(this.rows++, outcomeOf(p, o));
  }

  /** Rows numbered so far: the next enqueue or record takes this one. */
  get rowCount(): number {
    return this.rows;
  }

  /** Queues a payout to send; a full chunk goes out as soon as a request slot is free. */
  enqueue(item: PendingPayout): void {
    // Until it has another outcome, a queued payout is "not_sent" (see settleLeftovers).
    this.buffer.push({ payout: item.payout, hash: item.hash, row: this.rows++ });
    if (this.buffer.length < this.chunkSize) return;
    const chunk = this.buffer;
    this.buffer = [];
    const started = this.dispatch(chunk).then(() => {
      const k = this.waitingChunks.indexOf(started);
      if (k !== -1) this.waitingChunks.splice(k, 1);
    });
    this.waitingChunks.push(started);
  }

  /**
   * Backpressure for the reader: while two full chunks wait for a request slot, a promise
   * that settles when one is left, so reading keeps to the pace of the service. At most
   * INTENTS_AHEAD waiting chunks have an intent, so a crash leaves at most that many more
   * than the requests in flight to read back.
   */
  ready(): Promise<void> | undefined {
    const n = this.waitingChunks.length;
    return n >= 2 ? this.untilAbandoned(this.waitingChunks[n - 2]!) : undefined;
  }

  /** Sends what is buffered and waits for every request to settle. */
  async finish(): Promise<void> {
    if (this.buffer.length) {
      const chunk = this.buffer;
      this.buffer = [];
      await this.untilAbandoned(this.dispatch(chunk));
    }
    // Chunks still waiting for their place start, then every chunk settles.
    while (!this.abandoned && (this.waitingChunks.length || this.running.size)) {
      await this.untilAbandoned(Promise.all([...this.waitingChunks, ...this.running]));
    }
    await this.deps.journal.flush();
  }

  /**
   * Reads back payouts an earlier attempt may have sent (intent written, no outcome), once
   * the quiet time after the latest of those requests has passed (`sentAt`, ms since the epoch).
   */
  readBackEarlier(
    items: Array<{ payout: PayoutRequest }>,
    sentAt: number,
  ): Promise<ReadBackResult> {
    const quiet = { quietAt: sentAt + this.quietMs, intervalMs: this.quietMs };
    return readBack(items, quiet, this.settler.readBackDeps());
  }

  /**
   * Waits for a place in the pace, then starts the chunk without waiting for it to finish.
   * The chunk keeps its place until it is settled, except while its payouts in doubt wait
   * aside for their read-back (`aside.ts`, which bounds how many chunks may be in doubt).
   */
  private async dispatch(chunk: Queued[]): Promise<void> {
    const ticket = this.intents.waiting(chunk);
    this.waiting.add(ticket);
    const permit = await this.pace.acquire();
    this.waiting.delete(ticket);
    if (this.abandoned) {
      this.pace.done(permit);
      return;
    }
    this.intents.placed(ticket);
    this.sendingChunks.add(chunk);
    const run = this.runChunk(chunk, permit, ticket)
      .catch((err: unknown) => {
        if (!this.abandoned) this.fatal ??= err instanceof Error ? err : new Error(String(err));
      })
      .finally(() => {
        this.sendingChunks.delete(chunk);
        this.settleLeftovers(chunk);
        this.pace.done(permit);
        this.running.delete(run);
      });
    this.running.add(run);
  }

  /** Records as not sent the payouts of a finished chunk that got no outcome (stopped early). */
  private settleLeftovers(chunk: Queued[]): void {
    const store = this.deps.outcomes;
    for (const i of chunk) if (!store.has(i.row)) store.set(i.row, outcomeOf(i.payout, NOT_SENT));
  }

  /** The request body of a chunk. */
  private body(items: Queued[]): CreateRequest {
    const req: CreateRequest = { payouts: items.map((i) => i.payout) };
    if (this.settings.webhookUrl !== undefined) req.webhook_url = this.settings.webhookUrl;
    if (this.settings.batchReference !== undefined)
      req.batch_reference = this.settings.batchReference;
    return req;
  }

  /**
   * Sends one chunk until each payout has an outcome, sending again only what was not applied.
   * Its first attempt uses the intent written while it waited, if any.
   */
  private async runChunk(
    chunk: Queued[],
    permit: Permit,
    ticket?: AheadTicket<Queued>,
  ): Promise<void> {
    const policy = this.settings.retry;
    const started = this.clock.now();
    let items = chunk;
    if (this.abandoned) return;
    if (ticket && this.stopping)
      await this.intents.withdraw(ticket, 'the run stopped before it was sent');
    for (let attempt = 1; items.length && !this.stopping; attempt++) {
      const req = await this.intents.reserve(items, attempt === 1 ? ticket : undefined);
      if (this.abandoned) return;
      const sentAt = this.clock.now();
      this.pace.sending(permit);
      const exchange = await this.exchange(items);
      // Ended at once meanwhile: the payouts are reported in doubt, and stay so in the journal.
      if (this.abandoned) return;
      this.pace.answered(permit, paceSignal(exchange));
      this.aside.track(req, permit, items.length);
      const next = await this.settler
        .settle(judgeExchange(exchange), req, items, sentAt)
        .finally(() => this.aside.untrack(req));
      if (this.abandoned) return;
      if (next.split) {
        for (const half of next.split) {
          await this.pace.regain(permit);
          await this.runChunk(half, permit);
        }
        return;
      }
      items = next.retry;
      if (!items.length) break;
      if (attempt >= policy.maxAttempts || this.clock.now() - started > policy.maxTotalMs) {
        this.giveUp(items, next.error ?? new Error('the service did not apply these payouts'));
        return;
      }
      const wait = next.waitMs ?? backoffDelay(policy, attempt, this.random);
      // What is sent again was not applied: nothing is in doubt, so the place serves others.
      await this.pace.again(permit, this.retryWait(wait, next.waitMs, items.length));
    }
    this.requestsDone += 1;
    this.payoutsDone += chunk.length;
    this.deps.progress({ requests: this.requestsDone, payouts: this.payoutsDone });
  }

  /** One create request: its answer, or the error that stands for no answer. */
  private async exchange(items: Queued[]): Promise<{ answer?: CreateAnswer; error?: unknown }> {
    try {
      return { answer: await this.deps.client.createPayouts(this.body(items)) };
    } catch (error) {
      return { error };
    }
  }

  /** The wait before sending again; a Retry-After is shown (off a terminal, from 2 s on). */
  private async retryWait(ms: number, retryAfter: number | undefined, n: number): Promise<void> {
    const line =
      retryAfter !== undefined && ms >= 2_000
        ? `the service asked to wait (Retry-After): sending ${payouts(n)} again in ${Math.ceil(ms / 1000)} s`
        : undefined;
    const end =
      retryAfter === undefined
        ? undefined
        : this.deps.wait?.(`sending ${payouts(n)} again in`, ms, line);
    await this.clock.sleep(ms).catch(() => {});
    end?.();
  }

  /** Marks payouts as not sent after retries ran out, and stops the run. */
  private giveUp(items: Queued[], err: Error): void {
    for (const i of items)
      this.setOutcome(i, { status: 'not_sent', message: `not sent: ${err.message}` });
    this.fatal ??=
      err instanceof NetworkError || err instanceof ApiError
        ? err
        : new NetworkError(err.message, false);
  }

  /** Sets a payout's outcome, keeping its input amount and currency. */
  private setOutcome(item: Queued, o: Partial<PayoutOutcome> & { status: string }): void {
    // The store keeps a row's "sent earlier" mark.
    this.deps.outcomes.set(item.row, outcomeOf(item.payout, o));
  }
}

/** A payout's outcome: its reference, input amount and currency, and what became of it. */
function outcomeOf(
  p: PayoutRequest,
  o: Partial<PayoutOutcome> & { status: string },
): PayoutOutcome {
  return { reference_id: p.reference_id, amount: p.amount, currency: p.currency, ...o };
}

const NOT_SENT = { status: 'not_sent' };
