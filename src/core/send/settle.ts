/** A request settled: what its verdict proves recorded, what it leaves open read back, what follows. */
import type { PayoutClient } from '../../api/client.js';
import type { CreateAnswer, CreateResponse, CreateResult } from '../../api/types.js';
import type { Clock } from '../../clock.js';
import type { PayoutOutcome } from '../../domain/outcome.js';
import { isDocumentedStatus, statusKind } from '../../domain/statuses.js';
import { OutcomeUnknownError, RedirectError } from '../../errors.js';
import type { RunState } from '../../state/index.js';
import type { Pace } from '../pace.js';
import type { Aside } from './aside.js';
import type { EngineDeps, PendingPayout } from './options.js';
import { fromRecord, partsOf, type ReadBackDeps, readBack } from './readback.js';
import { judgeResults, type ReadBackReason, type RequestVerdict } from './verdict.js';

/** A queued payout with its row number (input order) in the outcome store. */
export interface Queued extends PendingPayout {
  row: number;
}

/** What follows a settled attempt: payouts to send again (after a wait), or halves to send. */
export interface Next {
  retry: Queued[];
  waitMs?: number;
  split?: Queued[][];
  /** Why the payouts to send again were not applied, should the retries run out. */
  error?: Error;
}

/** What settling a request needs from the engine's dependencies. */
export interface SettleDeps {
  client: Pick<PayoutClient, 'getPayout'>;
  journal: Pick<RunState, 'recordResults' | 'recordNotApplied' | 'recordUnknown'>;
  interrupt: AbortSignal;
  warn: (message: string) => void;
  wait?: EngineDeps['wait'];
  clock: Clock;
  /** See Timing.quietMs. */
  quietMs: number;
  /** The longest Retry-After waited for. */
  maxRetryAfterMs: number;
  aside: Pick<Aside, 'stepAside'>;
  /** The pace of read-backs. */
  readPace: Pace;
}

/** The run a request belongs to, as settling it changes it. */
export interface SettleRun {
  /** References whose outcome could not be established. */
  readonly unknown: string[];
  /** Batch references the service reported. */
  readonly batchReferences: Set<string>;
  /** Whether the run stopped waiting for its requests: nothing they bring is recorded. */
  abandoned(): boolean;
  /** Stops the run with this error, unless one stopped it already. */
  fail(err: Error): void;
  /** Lowers the chunk size for the rest of the run; false when it is already that low. */
  shrinkChunks(size: number): boolean;
  /** Sets a payout's outcome, keeping its input amount and currency. */
  setOutcome(item: Queued, o: Partial<PayoutOutcome> & { status: string }): void;
}

/** "1 payout" or "N payouts". */
export function payouts(n: number): string {
  return `${n} payout${n === 1 ? '' : 's'}`;
}

/**
 * Settles a request once its verdict is known: records what the answer proves, reads back
 * what it leaves open, and says what follows (send again, wait, split, or nothing).
 */
export class Settler {
  /** Whether the run said why a read-back's wait protects the money (once a run). */
  private readonly why = { told: false };

  constructor(
    private readonly deps: SettleDeps,
    private readonly run: SettleRun,
  ) {}

  /** Records what a verdict proves and decides what follows. */
  settle(v: RequestVerdict, req: number, items: Queued[], sentAt: number): Promise<Next> {
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
    if (v.error instanceof RedirectError) this.run.fail(v.error);
    this.deps.warn(`${why}: reading ${payouts(items.length)} back before deciding anything`);
    this.deps.aside.stepAside(req);
    const wait = this.retryAfter(v.retryAfterMs);
    if (wait) {
      const what = `reading ${payouts(items.length)} back after its Retry-After in`;
      const end = this.deps.wait?.(what, wait);
      await this.deps.clock.sleep(wait).catch(() => {});
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
      this.run.fail(v.error);
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
      this.run.setOutcome(items[0]!, { status: 'not_sent', message: `not sent: ${error.message}` });
      return { retry: [] };
    }
    const half = Math.ceil(items.length / 2);
    if (this.run.shrinkChunks(half)) {
      this.deps.warn(
        `the service refused ${items.length} payouts in one request: sending at most ${half} per request from now on`,
      );
    }
    return { retry: [], split: [items.slice(0, half), items.slice(half)] };
  }

  /** A Retry-After within the policy's cap, if the service sent one. */
  private retryAfter(ms: number | undefined): number | undefined {
    return ms === undefined ? undefined : Math.min(ms, this.deps.maxRetryAfterMs);
  }

  /** Records the results the service stated; reads back the payouts they leave open. */
  private async afterResults(
    answer: CreateAnswer,
    req: number,
    items: Queued[],
    sentAt: number,
  ): Promise<Next> {
    const res = answer.response!;
    if (res.batch_reference) this.run.batchReferences.add(res.batch_reference);
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
    if (this.run.abandoned()) return;
    const stateds = new Map(pairs);
    const { settled, notFound, unknown } = partsOf([...stateds.keys()], r);
    const stated: Array<[Queued, CreateResult]> = notFound.map((i) => [i, stateds.get(i)!]);
    const earlier: Array<[Queued, CreateResult]> = [];
    for (const { item, found, other } of settled) {
      const result = stateds.get(item)!;
      if (found && statusKind(found.status) !== 'failed') {
        const said = result.message ? ` (${result.message})` : '';
        const message = `the service answered failed${said} and holds this payout as ${found.status}: paid earlier, not by this run`;
        earlier.push([item, { reference_id: result.reference_id, ...fromRecord(found), message }]);
      } else {
        const message = [result.message, other].filter(Boolean).join('; ');
        stated.push([item, other ? { ...result, message } : result]);
      }
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
    if (this.run.abandoned()) return;
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
    const quiet = { quietAt: how.sentAt + this.deps.quietMs, intervalMs: this.deps.quietMs };
    // Nothing about these payouts is decided until they are read back: the others go on.
    this.deps.aside.stepAside(req);
    const r = await readBack(items, quiet, this.readBackDeps());
    if (this.run.abandoned()) return [];
    const { settled, notFound, unknown } = partsOf(items, r);
    this.recordResults(
      req,
      settled.map(({ item, result }) => [
        item,
        { reference_id: item.payout.reference_id, ...result },
      ]),
    );
    if (notFound.length) {
      const refs = notFound.map((i) => i.payout.reference_id);
      this.deps.journal.recordNotApplied(req, refs, 'not found when read back');
    }
    if (unknown.length) this.markUnknown(unknown, how.why, r.fatal);
    if (!how.refused) return notFound;
    for (const i of notFound)
      this.run.setOutcome(i, { status: 'not_sent', message: `not sent: ${how.why}` });
    return [];
  }

  /** Payouts whose outcome could not be established: they stay in flight, and the run stops. */
  private markUnknown(items: Array<[Queued, string]>, why: string, fatal?: Error): void {
    const refs = items.map(([i]) => i.payout.reference_id);
    this.deps.journal.recordUnknown(refs, why);
    this.run.unknown.push(...refs);
    // The cause is said once: a read-back that met what the request met says so.
    const same = (readWhy: string) => why.startsWith(readWhy);
    const first = items[0]![1];
    this.deps.warn(
      `could not read back ${payouts(items.length)}${same(first) ? ', for the same reason' : `: ${first}`}`,
    );
    for (const [i, readWhy] of items) {
      this.run.setOutcome(i, {
        status: 'unknown',
        message: `outcome unknown: ${why}; ${same(readWhy) ? 'not read back, for the same reason' : `read back: ${readWhy}`}`,
      });
    }
    this.run.fail(
      fatal ??
        new OutcomeUnknownError(
          `the outcome of ${payouts(this.run.unknown.length)} is unknown (${why}); run the same command again to check and finish the run`,
          this.run.unknown,
        ),
    );
  }

  /** What reading back needs, from the engine's own dependencies. */
  readBackDeps(): ReadBackDeps {
    return {
      client: this.deps.client,
      clock: this.deps.clock,
      interrupt: this.deps.interrupt,
      notify: this.deps.warn,
      wait: this.deps.wait,
      why: this.why,
      pace: this.deps.readPace,
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
}
