import type { PayoutClient } from '../../api/client.js';
import { backoffDelay, type RetryPolicy } from '../../api/retry.js';
import type {
  CreateAnswer,
  CreateRequest,
  CreateResponse,
  CreateResult,
  PayoutRecord,
  PayoutRequest,
} from '../../api/types.js';
import { type Clock, systemClock } from '../../clock.js';
import { ApiError, NetworkError, OutcomeUnknownError, RedirectError } from '../../errors.js';
import type { RunOutcomes, RunState } from '../../state/index.js';
import { type Answered, Pace, type Permit } from '../pace.js';
import { isDocumentedStatus, OUTCOME_UNKNOWN, statusKind } from '../../domain/statuses.js';
import { timingFor } from '../timing.js';
import type { PayoutOutcome } from '../../domain/outcome.js';
import { Aside } from './aside.js';
import { type ReadBackResult, readBack } from './readback.js';
import {
  judgeExchange,
  judgeResults,
  type ReadBackReason,
  type RequestVerdict,
} from './verdict.js';

/** How create requests are retried: never applied ones only, within these bounds. */
export const DEFAULT_SEND_RETRY: RetryPolicy = {
  maxAttempts: 6,
  baseDelayMs: 250,
  maxDelayMs: 8_000,
  maxTotalMs: 120_000,
  maxRetryAfterMs: 30_000,
};

/** See Timing.quietMs: the default when the caller gives none. */
const DEFAULT_QUIET_MS = timingFor(undefined).quietMs;

/** A payout on its way: the wire form and its identity hash for the journal. */
export interface PendingPayout {
  payout: PayoutRequest;
  hash: string;
}

/** A queued payout with its row number (input order) in the outcome store. */
interface Queued extends PendingPayout {
  row: number;
}

/** An intent written ahead for a chunk that waits for its place: its request id and commit. */
interface Prepared {
  req: number;
  at: number;
  committed: Promise<void>;
}

/** A full chunk waiting for a place in the pace, with its intent once written ahead. */
interface Waiting {
  chunk: Queued[];
  prepared?: Prepared;
}

/**
 * Chunks whose intent is written while they wait for a place, so that a freed place sends at
 * once rather than after a commit: a crash leaves at most this many more to read back.
 */
const PREPARED_AHEAD = 2;
/**
 * A prepared intent older than this share of the quiet time is withdrawn and written afresh
 * when its place comes, so the read-back after a crash still waits the quiet time after the
 * send, less at most this share of its margin beyond the request's deadline.
 */
const PREPARED_MAX_AGE_SHARE = 1 / 50;
/** Requests in doubt that may wait aside at once (or the most in flight, when more). */
const ASIDE_AT_LEAST = 4;

/** What the engine needs from outside. */
export interface EngineDeps {
  client: Pick<PayoutClient, 'createPayouts' | 'getPayout'>;
  journal: RunState;
  /**
   * Where each payout's outcome goes, by row number (the order of enqueue/addSentEarlier
   * calls): the journal's own store, which its commits write (stated results go through it).
   */
  outcomes: RunOutcomes;
  /** Aborted on SIGINT/SIGTERM: no new request starts after that. */
  interrupt: AbortSignal;
  /**
   * Aborted when the run is to end now: requests in flight are no longer waited for, their
   * payouts are in doubt (their intents are committed), and later answers are not recorded.
   */
  finishNow?: AbortSignal;
  /** Whether a person can press Ctrl-C again (stdin is a terminal): the stop's notice says so. */
  interactive?: boolean;
  warn: (message: string) => void;
  /** Called after each request settles, for the progress display. */
  progress: (done: { requests: number; payouts: number }) => void;
  /**
   * Shows a wait (a countdown on a terminal; off one, `line` once) until the returned
   * function is called: a quiet time, a Retry-After.
   */
  wait?: (what: string, ms: number, line?: string) => () => void;
  /** Told about each change of the pace, with its reason (--debug). */
  paceChanged?: (limit: number, why: string) => void;
  clock?: Clock;
  random?: () => number;
}

/** The shape of the requests the engine sends. */
export interface EngineSettings {
  chunkSize: number;
  /** Requests in flight at the start, and at most (see core/pace.ts). */
  concurrency: { initial: number; max: number };
  batchReference?: string;
  webhookUrl?: string;
  retry: RetryPolicy;
  /** See Timing.quietMs. */
  quietMs?: number;
}

/** Outcome fields from a payout record read back by GET. */
export function fromRecord(rec: PayoutRecord): Pick<PayoutOutcome, 'status' | 'transaction_id'> {
  return {
    status: rec.status,
    transaction_id: typeof rec.transaction_id === 'string' ? rec.transaction_id : undefined,
  };
}

/** The rows of an intent. */
function intentRows(items: Queued[]): number[] {
  return items.map((i) => i.row);
}

/** What follows a settled attempt: payouts to send again (after a wait), or halves to send. */
interface Next {
  retry: Queued[];
  waitMs?: number;
  split?: Queued[][];
  /** Why the payouts to send again were not applied, should the retries run out. */
  error?: Error;
}

/** What an exchange tells the pace: a 429, an answer (its latency counts), or neither. */
function paceSignal(exchange: { answer?: CreateAnswer }): Answered {
  const status = exchange.answer?.status;
  if (status === 503) return { kind: 'overloaded' };
  if (status === undefined || status >= 500) return { kind: 'failed' };
  if (status === 429) return { kind: 'throttled', retryAfterMs: exchange.answer?.retryAfterMs };
  return { kind: 'ok' };
}

/** "1 payout" or "N payouts". */
function payouts(n: number): string {
  return `${n} payout${n === 1 ? '' : 's'}`;
}

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
  private readonly readPace: Pace;
  private chunkSize: number;
  private readonly running = new Set<Promise<void>>();
  private buffer: Queued[] = [];
  /** Rows numbered so far: each enqueue or addSentEarlier takes the next. */
  private rows = 0;
  /** Full chunks waiting for a request slot, oldest first (each settles when it starts). */
  private readonly waitingChunks: Array<Promise<void>> = [];
  /** Waiting chunks with no intent yet, oldest first. */
  private readonly unprepared: Waiting[] = [];
  /** Waiting chunks whose intent is written (or being written). */
  private preparedCount = 0;
  private prepareScheduled = false;
  private nextReq: number;
  private requestsDone = 0;
  private payoutsDone = 0;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly quietMs: number;
  /** Chunks past their place in the pace, until settled: their payouts may be at the service. */
  private readonly sendingChunks = new Set<Queued[]>();
  /** Full chunks still waiting for their place. */
  private readonly waiting = new Set<Waiting>();
  /** Set when the run stopped waiting for its requests ("finish now"). */
  private abandoned = false;
  private readonly whenAbandoned: Promise<void>;
  /** Whether the run said why a read-back's wait protects the money (once a run). */
  private readonly why = { told: false };

  constructor(
    private readonly deps: EngineDeps,
    private readonly settings: EngineSettings,
  ) {
    if (deps.outcomes !== deps.journal.outcomes) {
      throw new Error("the engine's outcome store must be its journal's");
    }
    this.chunkSize = Math.max(1, settings.chunkSize);
    this.nextReq = deps.journal.lastRequestId + 1;
    this.clock = deps.clock ?? systemClock;
    const onChange = deps.paceChanged;
    this.pace = new Pace({ ...settings.concurrency, clock: this.clock, onChange });
    this.readPace = new Pace({ initial: 4, max: 16, clock: this.clock });
    this.aside = new Aside(this.pace, Math.max(ASIDE_AT_LEAST, settings.concurrency.max));
    this.random = deps.random ?? Math.random;
    this.quietMs = settings.quietMs ?? DEFAULT_QUIET_MS;
    deps.interrupt.addEventListener('abort', () => this.stoppingNotice(), { once: true });
    // Without a finish-now signal, never: the run waits for every request.
    this.whenAbandoned = new Promise((resolve) => {
      const now = deps.finishNow;
      if (now?.aborted) {
        this.abandoned = true;
        resolve();
      } else now?.addEventListener('abort', () => resolve(this.abandon()), { once: true });
    });
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
        if (w.prepared)
          this.withdraw(w.prepared.req, w.chunk, 'the run stopped before it was sent');
        this.settleLeftovers(w.chunk);
      }
    } catch (err) {
      this.fatal ??= err instanceof Error ? err : new Error(String(err));
    }
    this.settleLeftovers(this.buffer);
    this.buffer = [];
  }

  /** The promise, or the run's end-now, whichever comes first. */
  private untilAbandoned(p: Promise<unknown>): Promise<void> {
    return Promise.race([p.then(() => {}), this.whenAbandoned]);
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

  /** Records a payout that an earlier run (or attempt) already sent, without sending it. */
  addSentEarlier(
    p: PayoutRequest,
    known: Omit<PayoutOutcome, 'reference_id' | 'amount' | 'currency'>,
  ): void {
    this.deps.outcomes.set(this.rows++, {
      reference_id: p.reference_id,
      amount: p.amount,
      currency: p.currency,
      ...known,
      sent_earlier: true,
    });
  }

  /** Records a payout the run stopped before reaching: it was never sent. */
  notReached(p: PayoutRequest): void {
    this.deps.outcomes.set(this.rows++, {
      reference_id: p.reference_id,
      amount: p.amount,
      currency: p.currency,
      status: 'not_sent',
    });
  }

  /**
   * Records a payout an earlier attempt may have sent whose read-back did not finish: its
   * outcome is unknown until the next run reads it back.
   */
  inDoubt(p: PayoutRequest): void {
    this.unknown.push(p.reference_id);
    this.deps.outcomes.set(this.rows++, {
      reference_id: p.reference_id,
      amount: p.amount,
      currency: p.currency,
      status: OUTCOME_UNKNOWN,
      message: 'outcome unknown: an earlier request carried it, and it was not read back',
    });
  }

  /** Rows numbered so far: the next enqueue, addSentEarlier or notReached takes this one. */
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
   * PREPARED_AHEAD waiting chunks have an intent, so a crash leaves at most that many more
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
    return readBack(items, quiet, this.readBackDeps());
  }

  /**
   * Waits for a place in the pace, then starts the chunk without waiting for it to finish.
   * The chunk keeps its place until it is settled, except while its payouts in doubt wait
   * aside for their read-back (`aside.ts`, which bounds how many chunks may be in doubt).
   */
  private async dispatch(chunk: Queued[]): Promise<void> {
    const waiting: Waiting = { chunk };
    this.unprepared.push(waiting);
    this.waiting.add(waiting);
    this.schedulePrepare();
    const permit = await this.pace.acquire();
    this.waiting.delete(waiting);
    if (this.abandoned) {
      this.pace.done(permit);
      return;
    }
    const k = this.unprepared.indexOf(waiting);
    if (k !== -1) this.unprepared.splice(k, 1);
    if (waiting.prepared) {
      this.preparedCount -= 1;
      this.schedulePrepare();
    }
    this.sendingChunks.add(chunk);
    const run = this.runChunk(chunk, permit, waiting.prepared)
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

  /**
   * Prepares intents in the next check phase, after the requests started now: undici writes a
   * request on a reused connection there, and the commit would otherwise come first.
   */
  private schedulePrepare(): void {
    if (this.prepareScheduled) return;
    this.prepareScheduled = true;
    setImmediate(() => {
      this.prepareScheduled = false;
      this.prepareAhead();
    });
  }

  /** Writes the intent of the oldest waiting chunks, up to PREPARED_AHEAD of them. */
  private prepareAhead(): void {
    while (this.preparedCount < PREPARED_AHEAD && this.unprepared.length && !this.stopping) {
      const waiting = this.unprepared.shift()!;
      const req = this.nextReq++;
      const committed = this.deps.journal.recordIntent(req, intentRows(waiting.chunk));
      // A failed commit is the chunk's error when it comes to be sent.
      committed.catch(() => {});
      waiting.prepared = { req, at: this.clock.now(), committed };
      this.preparedCount += 1;
    }
  }

  /**
   * The request id of an attempt, once its intent is committed: the prepared one when still
   * fresh, otherwise a new one (a stale prepared intent is withdrawn: nothing was sent).
   */
  private async intentFor(items: Queued[], prepared: Prepared | undefined): Promise<number> {
    if (prepared) {
      await prepared.committed;
      if (this.clock.now() - prepared.at <= this.quietMs * PREPARED_MAX_AGE_SHARE) {
        return prepared.req;
      }
      this.withdraw(prepared.req, items, 'its intent was written too long before it was sent');
    }
    const req = this.nextReq++;
    await this.deps.journal.recordIntent(req, intentRows(items));
    return req;
  }

  /** Frees the payouts of an intent whose request was never sent. */
  private withdraw(req: number, items: Queued[], why: string): void {
    const refs = items.map((i) => i.payout.reference_id);
    this.deps.journal.recordNotApplied(req, refs, `not sent: ${why}`);
  }

  /** Records as not sent the payouts of a finished chunk that got no outcome (stopped early). */
  private settleLeftovers(chunk: Queued[]): void {
    const store = this.deps.outcomes;
    for (const i of chunk) {
      if (store.has(i.row)) continue;
      const p = i.payout;
      store.set(i.row, {
        reference_id: p.reference_id,
        amount: p.amount,
        currency: p.currency,
        status: 'not_sent',
      });
    }
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
   * Its first attempt uses the intent prepared while it waited, if any.
   */
  private async runChunk(chunk: Queued[], permit: Permit, prepared?: Prepared): Promise<void> {
    const policy = this.settings.retry;
    const started = this.clock.now();
    let items = chunk;
    if (this.abandoned) return;
    if (prepared && this.stopping) {
      await prepared.committed;
      this.withdraw(prepared.req, chunk, 'the run stopped before it was sent');
    }
    for (let attempt = 1; items.length && !this.stopping; attempt++) {
      const req = await this.intentFor(items, attempt === 1 ? prepared : undefined);
      if (this.abandoned) return;
      const sentAt = this.clock.now();
      this.pace.sending(permit);
      const exchange = await this.exchange(items);
      // Ended at once meanwhile: the payouts are reported in doubt, and stay so in the journal.
      if (this.abandoned) return;
      this.pace.answered(permit, paceSignal(exchange));
      this.aside.track(req, permit, items.length);
      const next = await this.settle(judgeExchange(exchange), req, items, sentAt).finally(() =>
        this.aside.untrack(req),
      );
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

  /** Records what a verdict proves and decides what follows. */
  private settle(v: RequestVerdict, req: number, items: Queued[], sentAt: number): Promise<Next> {
    if (v.kind === 'results') return this.afterResults(v.answer, req, items, sentAt);
    if (v.kind === 'read-back') return this.afterUnknownAnswer(v, req, items, sentAt);
    return Promise.resolve(this.notApplied(v, req, items));
  }

  /** An answer that proves nothing: every payout is read back before anything is decided. */
  private async afterUnknownAnswer(
    v: Extract<RequestVerdict, { kind: 'read-back' }>,
    req: number,
    items: Queued[],
    sentAt: number,
  ): Promise<Next> {
    const why = v.error.message;
    // Every later request would be redirected too.
    if (v.error instanceof RedirectError) this.fatal ??= v.error;
    this.deps.warn(`${why}: reading ${payouts(items.length)} back before deciding anything`);
    this.aside.stepAside(req);
    const wait = this.retryAfter(v.retryAfterMs);
    if (wait) {
      const what = `reading ${payouts(items.length)} back after its Retry-After in`;
      const end = this.deps.wait?.(what, wait);
      await this.clock.sleep(wait).catch(() => {});
      end?.();
    }
    const retry = await this.settleByReading(req, items, { why, sentAt, refused: v.refused });
    return { retry, error: v.error };
  }

  /** A request that provably did not apply: free its payouts, then retry, split or stop. */
  private notApplied(
    v: Extract<RequestVerdict, { kind: 'not-applied' }>,
    req: number,
    items: Queued[],
  ): Next {
    const refs = items.map((i) => i.payout.reference_id);
    this.deps.journal.recordNotApplied(req, refs, v.error.message);
    if (v.reason === 'credentials') {
      this.fatal ??= v.error;
      return { retry: [] };
    }
    if (v.reason === 'too-large') return this.split(items, v.error);
    if (v.reason === 'rate-limited') {
      // The refused request waits for its Retry-After (the pace keeps the others to the rate
      // the service allowed); without one, a short backoff.
      return { retry: items, waitMs: this.retryAfter(v.retryAfterMs), error: v.error };
    }
    return { retry: items, error: v.error };
  }

  /** Halves a request refused as too large (HTTP 413), lowering the chunk size for the run. */
  private split(items: Queued[], error: Error): Next {
    if (items.length === 1) {
      this.setOutcome(items[0]!, { status: 'not_sent', message: `not sent: ${error.message}` });
      return { retry: [] };
    }
    const half = Math.ceil(items.length / 2);
    if (half < this.chunkSize) {
      this.chunkSize = half;
      this.deps.warn(
        `the service refused ${items.length} payouts in one request: sending at most ${half} per request from now on`,
      );
    }
    return { retry: [], split: [items.slice(0, half), items.slice(half)] };
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

  /** A Retry-After within the policy's cap, if the service sent one. */
  private retryAfter(ms: number | undefined): number | undefined {
    return ms === undefined ? undefined : Math.min(ms, this.settings.retry.maxRetryAfterMs);
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

  /** Records the results the service stated; reads back the payouts they leave open. */
  private async afterResults(
    answer: CreateAnswer,
    req: number,
    items: Queued[],
    sentAt: number,
  ): Promise<Next> {
    const res = answer.response!;
    if (res.batch_reference) this.batchReferences.add(res.batch_reference);
    if (answer.error) {
      this.deps.warn(
        `${answer.error.message}; the answer holds per-payout results, which are used`,
      );
    } else this.checkCounts(res);
    const j = judgeResults(res.results, items);
    if (j.strays.length) {
      this.deps.warn(
        `the service answered with results for references it was not sent: ${j.strays.slice(0, 5).join(', ')}`,
      );
    }
    const failed = j.stated.filter((s) => s.result.status === 'failed');
    this.recordResults(
      req,
      j.stated.filter((s) => s.result.status !== 'failed').map((s) => [s.item, s.result]),
    );
    await this.checkFailed(
      req,
      failed.map((s) => [s.item, s.result]),
    );
    const refine = j.readBack.filter((r) => r.stated);
    const open = j.readBack.filter((r) => !r.stated);
    if (refine.length) await this.refine(req, refine);
    if (!open.length) return { retry: [] };
    const why = open[0]!.why;
    this.deps.warn(
      `${why}${open.length > 1 ? ` (and ${open.length - 1} more)` : ''}: reading ${payouts(open.length)} back before deciding anything`,
    );
    // A refusal with results for some: those it does not have would be refused again.
    const refused = answer.error !== undefined && answer.status < 500;
    const retry = await this.settleByReading(
      req,
      open.map((r) => r.item),
      { why, sentAt, refused },
    );
    return { retry, error: answer.error ?? new Error(why) };
  }

  /**
   * Stated failures are read back: a service that refuses a reference it already holds says
   * "failed" of a payout made earlier, from somewhere this history has not seen. Ours, in any
   * status but failed or canceled: sent earlier, found at the service. Not found, failed, or
   * another payout: failed as stated. Not readable: outcome unknown, and the run stops.
   */
  private async checkFailed(req: number, pairs: Array<[Queued, CreateResult]>): Promise<void> {
    if (!pairs.length) return;
    const quiet = { quietAt: Number.NEGATIVE_INFINITY };
    const r = await readBack(
      pairs.map(([item]) => item),
      quiet,
      this.readBackDeps(),
    );
    if (this.abandoned) return;
    const stated: Array<[Queued, CreateResult]> = [];
    const earlier: Array<[Queued, CreateResult]> = [];
    const unknown: Array<[Queued, string]> = [];
    for (const [item, result] of pairs) {
      const o = r.outcomes.get(item.payout.reference_id);
      if (o?.kind === 'found' && statusKind(o.record.status) !== 'failed') {
        const said = result.message ? ` (${result.message})` : '';
        const message = `the service answered failed${said} and holds this payout as ${o.record.status}: paid earlier, not by this run`;
        earlier.push([
          item,
          { reference_id: result.reference_id, ...fromRecord(o.record), message },
        ]);
      } else if (o?.kind === 'other-payout') {
        stated.push([
          item,
          { ...result, message: [result.message, o.why].filter(Boolean).join('; ') },
        ]);
      } else if (o?.kind === 'found' || o?.kind === 'not-found') stated.push([item, result]);
      else unknown.push([item, o?.why ?? 'it was not read back']);
    }
    this.recordResults(req, stated);
    this.recordResults(req, earlier, { sent_earlier: true, found_at_service: true });
    if (unknown.length) {
      const why =
        'the service answered failed, and whether it holds the payout from earlier could not be checked';
      this.markUnknown(unknown, why, r.fatal);
    }
  }

  /** Records per-payout results: the journal's result, which is also the row's outcome. */
  private recordResults(
    req: number,
    pairs: Array<[Queued, CreateResult]>,
    marks: Pick<PayoutOutcome, 'sent_earlier' | 'found_at_service'> = {},
  ): void {
    if (!pairs.length) return;
    const rows = pairs.map(([item, r]) => {
      const p = item.payout;
      const outcome: PayoutOutcome = {
        reference_id: p.reference_id,
        amount: p.amount,
        currency: p.currency,
        status: r.status,
        transaction_id: r.transaction_id,
        charges: r.charges,
        message: r.message,
        ...marks,
      };
      return { row: item.row, outcome };
    });
    this.deps.journal.recordResults(req, rows);
  }

  /**
   * Results with a status the service does not document: the payout exists, so a read-back
   * may only replace the status with a documented one; otherwise the stated one stays.
   */
  private async refine(req: number, reasons: Array<ReadBackReason<Queued>>): Promise<void> {
    const r = await readBack(
      reasons.map((x) => x.item),
      { quietAt: Number.NEGATIVE_INFINITY },
      this.readBackDeps(),
    );
    if (this.abandoned) return;
    const pairs: Array<[Queued, CreateResult]> = reasons.map(({ item, stated }) => {
      const o = r.outcomes.get(item.payout.reference_id);
      if (o?.kind === 'found' && isDocumentedStatus(o.record.status)) {
        return [item, { ...stated!, ...fromRecord(o.record) }];
      }
      return [item, stated!];
    });
    this.recordResults(req, pairs);
  }

  /**
   * Reads back payouts whose outcome the answer left open. Found: their record is the
   * outcome. Not found after the quiet time, twice: taken as not applied, so they
   * are returned to be sent again, or reported not sent when the service refused the
   * request. Anything else leaves them unknown, and the run stops.
   */
  private async settleByReading(
    req: number,
    items: Queued[],
    how: { why: string; sentAt: number; refused: boolean },
  ): Promise<Queued[]> {
    const quiet = { quietAt: how.sentAt + this.quietMs, intervalMs: this.quietMs };
    // Nothing about these payouts is decided until they are read back: the others go on.
    this.aside.stepAside(req);
    const r = await readBack(items, quiet, this.readBackDeps());
    if (this.abandoned) return [];
    const found: Array<[Queued, CreateResult]> = [];
    const notFound: Queued[] = [];
    const unknown: Array<[Queued, string]> = [];
    for (const item of items) {
      const o = r.outcomes.get(item.payout.reference_id);
      const ref = item.payout.reference_id;
      if (o?.kind === 'found') found.push([item, { reference_id: ref, ...fromRecord(o.record) }]);
      else if (o?.kind === 'other-payout')
        found.push([item, { reference_id: ref, status: 'failed', message: o.why }]);
      else if (o?.kind === 'not-found') notFound.push(item);
      else unknown.push([item, o?.why ?? 'it was not read back']);
    }
    this.recordResults(req, found);
    if (notFound.length) {
      const refs = notFound.map((i) => i.payout.reference_id);
      this.deps.journal.recordNotApplied(req, refs, 'not found when read back');
    }
    if (unknown.length) this.markUnknown(unknown, how.why, r.fatal);
    if (!how.refused) return notFound;
    for (const i of notFound)
      this.setOutcome(i, { status: 'not_sent', message: `not sent: ${how.why}` });
    return [];
  }

  /** Payouts whose outcome could not be established: they stay in flight, and the run stops. */
  private markUnknown(items: Array<[Queued, string]>, why: string, fatal?: Error): void {
    const refs = items.map(([i]) => i.payout.reference_id);
    this.deps.journal.recordUnknown(refs, why);
    this.unknown.push(...refs);
    this.deps.warn(`could not read back ${payouts(items.length)}: ${items[0]![1]}`);
    for (const [i, readWhy] of items) {
      this.setOutcome(i, {
        status: 'unknown',
        message: `outcome unknown: ${why}; read back: ${readWhy}`,
      });
    }
    this.fatal ??=
      fatal ??
      new OutcomeUnknownError(
        `the outcome of ${payouts(this.unknown.length)} is unknown (${why}); run the same command again to check and finish the run`,
        this.unknown,
      );
  }

  /** What reading back needs, from the engine's own dependencies. */
  private readBackDeps() {
    return {
      client: this.deps.client,
      clock: this.clock,
      interrupt: this.deps.interrupt,
      notify: this.deps.warn,
      wait: this.deps.wait,
      why: this.why,
      pace: this.readPace,
    };
  }

  /** Warns when the service's counts disagree with its own per-result statuses. */
  private checkCounts(res: CreateResponse): void {
    const failed = res.results.filter(
      (r) => r.status === 'failed' || r.status === 'canceled',
    ).length;
    if (
      res.failed_count !== failed ||
      res.success_count + res.failed_count !== res.results.length
    ) {
      this.deps.warn(
        `the service's counts (success_count ${res.success_count}, failed_count ${res.failed_count}) disagree with its ${res.results.length} results (${failed} failed or canceled); the results are used`,
      );
    }
  }

  /** Sets a payout's outcome, keeping its input amount and currency. */
  private setOutcome(item: Queued, o: Partial<PayoutOutcome> & { status: string }): void {
    const p = item.payout;
    // The store keeps a row's "sent earlier" mark.
    this.deps.outcomes.set(item.row, {
      reference_id: p.reference_id,
      amount: p.amount,
      currency: p.currency,
      ...o,
    });
  }
}
