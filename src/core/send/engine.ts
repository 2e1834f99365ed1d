import type { PayoutClient } from '../../api/client.js';
import { backoffDelay, DEFAULT_READ_RETRY, type RetryPolicy, withRetry } from '../../api/retry.js';
import type {
  CreateRequest,
  CreateResponse,
  CreateResult,
  PayoutRecord,
  PayoutRequest,
} from '../../api/types.js';
import {
  ApiError,
  CredentialsError,
  NetworkError,
  NotFoundError,
  OutcomeUnknownError,
  RateLimitedError,
  RedirectError,
  RequestRejectedError,
  TooLargeError,
} from '../../errors.js';
import type { RunJournal } from '../../journal/index.js';
import type { PayoutOutcome } from './outcome.js';
import type { OutcomeStore } from './outcome-store.js';

/** How create requests are retried: never applied ones only, within these bounds. */
export const DEFAULT_SEND_RETRY: RetryPolicy = {
  maxAttempts: 6,
  baseDelayMs: 250,
  maxDelayMs: 8_000,
  maxTotalMs: 120_000,
  maxRetryAfterMs: 30_000,
};

/**
 * The reader runs ahead of the requests by whole rounds of chunks: it stops when two rounds
 * of full chunks wait for a request slot and resumes when one round is left, so it queues a
 * round at a time and their intents, written while they wait, share one fsync. A round is
 * the concurrency, at most MAX_ROUND chunks, so a process that dies leaves at most
 * 2 x MAX_ROUND chunks more to read back than were in flight (see ARCHITECTURE.md).
 */
const MAX_ROUND = 4;

/** A payout on its way: the wire form and its identity hash for the journal. */
export interface PendingPayout {
  payout: PayoutRequest;
  hash: string;
}

/** A queued payout with its row number (input order) in the outcome store. */
interface Queued extends PendingPayout {
  row: number;
}

/** What the engine needs from outside. */
export interface EngineDeps {
  client: Pick<PayoutClient, 'createPayouts' | 'getPayout'>;
  journal: RunJournal;
  /** Where each payout's outcome goes, by row number (the order of enqueue/addSentEarlier calls). */
  outcomes: OutcomeStore;
  /** Aborted on SIGINT/SIGTERM: no new request starts after that. */
  interrupt: AbortSignal;
  warn: (message: string) => void;
  /** Called after each request settles, for the progress display. */
  progress: (done: { requests: number; payouts: number }) => void;
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
  now?: () => number;
}

/** The shape of the requests the engine sends. */
export interface EngineSettings {
  chunkSize: number;
  concurrency: number;
  batchReference?: string;
  webhookUrl?: string;
  retry: RetryPolicy;
}

/** Outcome fields from a payout record read back by GET. */
export function fromRecord(rec: PayoutRecord): Pick<PayoutOutcome, 'status' | 'transaction_id'> {
  return {
    status: rec.status,
    transaction_id: typeof rec.transaction_id === 'string' ? rec.transaction_id : undefined,
  };
}

/** Result of reading back payouts whose create request may or may not have been applied. */
export interface Reconciled {
  found: Array<{ ref: string; record: PayoutRecord }>;
  /** Not at the service: safe to send. */
  notFound: string[];
  /** Could not be read back: must not be sent again blindly. */
  unknown: string[];
  /** A credentials error that stopped the reading. */
  fatal?: Error;
}

/** An intent written while its chunk waited for a request slot. */
interface EarlyIntent {
  req: number;
  /** Settles when the intent is durable (or the journal failed). */
  done: Promise<void>;
}

/** The [reference, payout hash] pairs of an intent. */
function intentItems(items: PendingPayout[]): Array<{ ref: string; hash: string }> {
  return items.map((i) => ({ ref: i.payout.reference_id, hash: i.hash }));
}

/**
 * Pairs the results of a create answer with the payouts sent: `results[k]` is the answer for
 * `answered[k]`; `missing` were not mentioned. Warns about results for references not sent.
 */
export function matchResults<T extends PendingPayout>(
  res: CreateResponse,
  items: T[],
  warn: (message: string) => void,
): { answered: T[]; results: CreateResult[]; missing: T[] } {
  const list = res.results;
  // The usual answer lists the payouts in the order sent: then no lookup table is needed.
  let inOrder = list.length === items.length;
  for (let k = 0; inOrder && k < list.length; k++) {
    if (list[k]!.reference_id !== items[k]!.payout.reference_id) inOrder = false;
  }
  if (inOrder) return { answered: items, results: list, missing: [] };
  const byRef = new Map(list.map((r) => [r.reference_id, r]));
  const sentRefs = new Set(items.map((i) => i.payout.reference_id));
  const strays = list.filter((r) => !sentRefs.has(r.reference_id)).map((r) => r.reference_id);
  if (strays.length)
    warn(
      `the service answered with results for references it was not sent: ${strays.slice(0, 5).join(', ')}`,
    );
  const answered: T[] = [];
  const results: CreateResult[] = [];
  const missing: T[] = [];
  for (const i of items) {
    const r = byRef.get(i.payout.reference_id);
    if (r) {
      answered.push(i);
      results.push(r);
    } else missing.push(i);
  }
  return { answered, results, missing };
}

/**
 * Sends payouts in chunks, a bounded number at a time, with the journal written ahead of
 * every request. A request whose outcome is unknown is never sent again blindly: its
 * payouts are first read back by reference_id.
 */
export class SendEngine {
  /** References whose outcome could not be established. */
  readonly unknown: string[] = [];
  /** The error that stopped the run early, if any. */
  fatal?: Error;
  /** Batch references the service reported. */
  readonly batchReferences = new Set<string>();
  private limit: number;
  private chunkSize: number;
  private active = 0;
  private readonly slotWaiters: Array<() => void> = [];
  private readonly running = new Set<Promise<void>>();
  private buffer: Queued[] = [];
  /** Rows numbered so far: each enqueue or addSentEarlier takes the next. */
  private rows = 0;
  /** Full chunks waiting for a request slot, oldest first (each settles when it starts). */
  private readonly waitingChunks: Array<Promise<void>> = [];
  /** Chunks queued per refill of the reader (see MAX_ROUND). */
  private readonly round: number;
  private nextReq: number;
  private requestsDone = 0;
  private payoutsDone = 0;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly random: () => number;
  private readonly now: () => number;

  constructor(
    private readonly deps: EngineDeps,
    private readonly settings: EngineSettings,
  ) {
    this.limit = Math.max(1, settings.concurrency);
    this.chunkSize = Math.max(1, settings.chunkSize);
    this.round = Math.min(this.limit, MAX_ROUND);
    this.nextReq = deps.journal.lastRequestId + 1;
    this.sleep = deps.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
    this.random = deps.random ?? Math.random;
    this.now = deps.now ?? Date.now;
  }

  /** Every payout the run reached, in input order, with its outcome. */
  get outcomes(): OutcomeStore {
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
   * Backpressure for the reader: while two rounds of full chunks wait for a request slot, a
   * promise that settles when one round is left, so reading keeps to the pace of the service
   * and memory stays flat on large files.
   */
  ready(): Promise<void> | undefined {
    const n = this.waitingChunks.length;
    // Chunks take slots in the order they were queued, so this one starts with one round left.
    return n >= 2 * this.round ? this.waitingChunks[n - this.round - 1] : undefined;
  }

  /** Sends what is buffered and waits for every request to settle. */
  async finish(): Promise<void> {
    if (this.buffer.length) {
      const chunk = this.buffer;
      this.buffer = [];
      await this.dispatch(chunk);
    }
    while (this.running.size) await Promise.all([...this.running]);
    await this.deps.journal.flush();
  }

  /** Reads back payouts by reference_id: found, not found (safe to send), or unknown. */
  async reconcile(refs: string[]): Promise<Reconciled> {
    const out: Reconciled = { found: [], notFound: [], unknown: [] };
    const queue = [...refs];
    const worker = async () => {
      for (let ref = queue.shift(); ref !== undefined; ref = queue.shift()) {
        if (out.fatal) {
          out.unknown.push(ref);
          continue;
        }
        try {
          out.found.push({ ref, record: await this.getWithRetry(ref) });
        } catch (err) {
          if (err instanceof NotFoundError) out.notFound.push(ref);
          else {
            out.unknown.push(ref);
            if (err instanceof CredentialsError) out.fatal = err;
          }
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(8, refs.length) }, worker));
    return out;
  }

  /** Waits for a free request slot, then starts the chunk without waiting for it to finish. */
  private async dispatch(chunk: Queued[]): Promise<void> {
    let early: EarlyIntent | undefined;
    if (this.active >= this.limit && !this.stopping) {
      // The chunk must wait for a slot: make its intent durable meanwhile (it joins the group
      // commit under way), so the request goes out the moment a slot frees.
      const req = this.nextReq++;
      const done = this.deps.journal.recordIntent(req, intentItems(chunk));
      done.catch(() => {});
      early = { req, done };
    }
    while (this.active >= this.limit) {
      await new Promise<void>((resolve) => this.slotWaiters.push(resolve));
    }
    this.active += 1;
    const run = this.runChunk(chunk, early)
      .catch((err: unknown) => {
        this.fatal ??= err instanceof Error ? err : new Error(String(err));
      })
      .finally(() => {
        this.settleLeftovers(chunk);
        this.active -= 1;
        this.running.delete(run);
        this.slotWaiters.shift()?.();
      });
    this.running.add(run);
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

  /** Sends one chunk until each payout has an outcome, retrying only what is safe to retry. */
  private async runChunk(chunk: Queued[], early?: EarlyIntent): Promise<void> {
    const { journal } = this.deps;
    const policy = this.settings.retry;
    const started = this.now();
    let items = chunk;
    let attempt = 0;
    let intent = early;
    while (items.length) {
      if (this.stopping) {
        // An intent written ahead whose request never went out: its payouts are free again.
        if (intent) {
          journal.recordNotApplied(
            intent.req,
            items.map((i) => i.payout.reference_id),
            'not sent: the run stopped before this request',
          );
        }
        return;
      }
      let req: number;
      if (intent) {
        req = intent.req;
        await intent.done;
        intent = undefined;
      } else {
        req = this.nextReq++;
        await journal.recordIntent(req, intentItems(items));
      }
      let response: CreateResponse;
      try {
        response = await this.deps.client.createPayouts(this.body(items));
      } catch (err) {
        const next = await this.afterFailure(err, req, items);
        if (next.split) {
          for (const half of next.split) await this.runChunk(half);
          return;
        }
        items = next.retry;
        attempt += 1;
        if (!items.length) break;
        if (attempt >= policy.maxAttempts || this.now() - started > policy.maxTotalMs) {
          this.giveUp(items, err);
          return;
        }
        await this.sleep(next.waitMs ?? backoffDelay(policy, attempt, this.random));
        continue;
      }
      items = await this.afterSuccess(response, req, items);
      if (items.length) {
        attempt += 1;
        if (attempt >= policy.maxAttempts) {
          this.giveUp(items, new Error('the service did not report these payouts'));
          return;
        }
        await this.sleep(backoffDelay(policy, attempt, this.random));
      }
    }
    this.requestsDone += 1;
    this.payoutsDone += chunk.length;
    this.deps.progress({ requests: this.requestsDone, payouts: this.payoutsDone });
  }

  /** Marks payouts as not sent after retries ran out, and stops the run. */
  private giveUp(items: Queued[], err: unknown): void {
    const why = err instanceof Error ? err.message : String(err);
    for (const i of items) this.setOutcome(i, { status: 'not_sent', message: `not sent: ${why}` });
    this.fatal ??=
      err instanceof NetworkError || err instanceof ApiError ? err : new NetworkError(why, false);
  }

  /** Decides what follows a failed create request. */
  private async afterFailure(
    err: unknown,
    req: number,
    items: Queued[],
  ): Promise<{ retry: Queued[]; waitMs?: number; split?: Queued[][] }> {
    const { journal } = this.deps;
    const refs = items.map((i) => i.payout.reference_id);
    if (err instanceof RateLimitedError) {
      journal.recordNotApplied(req, refs, 'rate limited (429)');
      // Stop pushing against the limit: fewer requests at a time for the rest of the run.
      if (this.limit > 1) {
        this.limit = Math.max(1, Math.floor(this.limit / 2));
        this.deps.warn(
          `rate limited by the service: sending ${this.limit} request${this.limit === 1 ? '' : 's'} at a time from now on`,
        );
      }
      const wait = Math.min(
        err.retryAfterMs ?? backoffDelay(this.settings.retry, 1, this.random),
        this.settings.retry.maxRetryAfterMs,
      );
      return { retry: items, waitMs: wait };
    }
    if (err instanceof TooLargeError) {
      journal.recordNotApplied(req, refs, 'refused as too large');
      if (items.length === 1) {
        this.setOutcome(items[0]!, { status: 'not_sent', message: `not sent: ${err.message}` });
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
    if (err instanceof NetworkError && !err.mayHaveBeenApplied) {
      journal.recordNotApplied(req, refs, err.message);
      return { retry: items };
    }
    if (err instanceof CredentialsError || err instanceof RedirectError) {
      journal.recordNotApplied(req, refs, err.message);
      this.fatal ??= err;
      return { retry: [] };
    }
    if (err instanceof RequestRejectedError) {
      journal.recordNotApplied(req, refs, err.message);
      for (const i of items)
        this.setOutcome(i, {
          status: 'failed',
          message: `request rejected: ${err.serviceMessages.join('; ') || err.message}`,
        });
      return { retry: [] };
    }
    // Timeout, cut connection, 5xx, unreadable answer: it may have been applied.
    const why = err instanceof Error ? err.message : String(err);
    this.deps.warn(
      `${why}: reading ${items.length} payout${items.length === 1 ? '' : 's'} back before deciding to resend`,
    );
    return { retry: await this.settleByReading(req, items, why) };
  }

  /** Reads back payouts of a request with an unknown outcome; returns those safe to resend. */
  private async settleByReading(req: number, items: Queued[], why: string): Promise<Queued[]> {
    const { journal } = this.deps;
    const byRef = new Map(items.map((i) => [i.payout.reference_id, i]));
    const r = await this.reconcile([...byRef.keys()]);
    if (r.found.length) {
      journal.recordOutcome(
        req,
        r.found.map(({ ref, record }) => ({ ref, ...fromRecord(record) })),
      );
      for (const { ref, record } of r.found) this.setOutcome(byRef.get(ref)!, fromRecord(record));
    }
    if (r.notFound.length) journal.recordNotApplied(req, r.notFound, 'not found when read back');
    if (r.unknown.length) {
      journal.recordUnknown(r.unknown, why);
      this.unknown.push(...r.unknown);
      for (const ref of r.unknown)
        this.setOutcome(byRef.get(ref)!, { status: 'unknown', message: `outcome unknown: ${why}` });
      this.fatal ??=
        r.fatal ??
        new OutcomeUnknownError(
          `the outcome of ${this.unknown.length} payout${this.unknown.length === 1 ? '' : 's'} is unknown (${why}); run the same command again to check and finish the run`,
          this.unknown,
        );
    }
    return r.notFound.map((ref) => byRef.get(ref)!);
  }

  /** Records a create answer; returns payouts the answer did not mention, once read back as not found. */
  private async afterSuccess(res: CreateResponse, req: number, items: Queued[]): Promise<Queued[]> {
    if (res.batch_reference) this.batchReferences.add(res.batch_reference);
    const { answered, results, missing } = matchResults(res, items, this.deps.warn);
    this.deps.journal.recordOutcome(
      req,
      results.map((r) => ({
        ref: r.reference_id,
        status: r.status,
        transaction_id: r.transaction_id,
        charges: r.charges,
        amount: r.amount,
        currency: r.currency,
        message: r.message,
      })),
    );
    const store = this.deps.outcomes;
    for (let k = 0; k < answered.length; k++) {
      const r = results[k]!;
      const item = answered[k]!;
      const p = item.payout;
      // Built field by field, in one shape: a spread per row showed in profiles of large runs.
      store.set(item.row, {
        reference_id: p.reference_id,
        amount: p.amount,
        currency: p.currency,
        status: r.status,
        transaction_id: r.transaction_id,
        charges: r.charges,
        message: r.message,
      });
    }
    this.checkCounts(res);
    if (!missing.length) return [];
    this.deps.warn(
      `the service's answer did not include ${missing.length} of the payouts sent: reading them back before deciding to resend`,
    );
    return this.settleByReading(req, missing, 'the service did not report these payouts');
  }

  /** Warns when the service's counts disagree with its own per-result statuses. */
  private checkCounts(res: CreateResponse): void {
    const failed = res.results.filter(
      (r) => r.status !== 'success' && r.status !== 'pending',
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

  /** GET with the bounded retries of every read (network, 5xx, 429). */
  private getWithRetry(ref: string): Promise<PayoutRecord> {
    return withRetry(() => this.deps.client.getPayout(ref), DEFAULT_READ_RETRY, {
      sleep: this.sleep,
      random: this.random,
      now: this.now,
    });
  }
}
