/**
 * What `status` says of a failed or canceled payout that a retry took on (docs/history.md):
 * the history links it to the last retry of its chain, and the service is asked about that
 * retry as about the references themselves. By the one rule (src/domain/chain.ts, byRetry) the
 * payout is then paid by its retry, pending as it, or failed; a retry the service did not
 * answer about leaves the payout's state unknown. The history alone never makes a payout paid:
 * the retry's status is the service's word.
 */
import { type ByRetry, byRetry, type HeldRef } from '../../domain/chain.js';
import { heldKind, serviceStatusKind } from '../../domain/statuses.js';
import { InterruptedError } from '../../errors.js';
import { ExitCode, type ExitCodeValue, worstExitCode } from '../../exit-codes.js';
import type { Output } from '../../output/output.js';
import { historyPlace } from '../history-place.js';
import type { RunsSource } from '../runs/reader.js';
import { exitCodeForOutcome, type StatusReport } from './check.js';
import { type LookupOutcome, LookupsInterrupted } from './lookup.js';
import { failedInHistory, type NotFoundContext, nearInHistory } from './near.js';

/** A looked-up payout's chain: its last retry, the service's answer about it, and its state. */
export interface Chain {
  tail: HeldRef;
  /** Undefined when the retry was not looked up (the history could not be read for it). */
  answer?: LookupOutcome;
  by?: ByRetry;
}

/** The chain of a payout found failed or canceled that a retry took on; undefined otherwise. */
export function chainOf(o: LookupOutcome, ctx: NotFoundContext | undefined): Chain | undefined {
  if (o.kind !== 'found') return undefined;
  const tail = ctx?.retried?.get(o.reference_id);
  if (!tail) return undefined;
  const answer = ctx?.retries?.get(tail.ref);
  if (answer?.kind !== 'found') return { tail, answer };
  const kind = heldKind({ state: 'done', status: answer.record.status });
  const by = byRetry(o.record.status, { kind });
  return { tail, answer, ...(by ? { by } : {}) };
}

/**
 * The outcome a looked-up payout counts as, for counts, the exit code and the table's order:
 * paid or pending by its retry, the retry's answer; a retry the service did not answer about,
 * that error (the payout's state is not known); else its own.
 */
export function counted(o: LookupOutcome, ctx: NotFoundContext | undefined): LookupOutcome {
  const chain = chainOf(o, ctx);
  const answer = chain?.answer;
  if (!answer || (!chain.by && answer.kind !== 'error')) return o;
  return { ...answer, reference_id: o.reference_id };
}

/** The exit code of the looked-up payouts, each counted by its chain (3 > 7 > 6 > 4 > 5). */
export function chainExitCode(
  outcomes: readonly LookupOutcome[],
  ctx: NotFoundContext | undefined,
): ExitCodeValue {
  return worstExitCode(outcomes.map((o) => exitCodeForOutcome(counted(o, ctx))));
}

/** A retry's status as `retried_as` gives it: the service's, not_found, or unknown. */
export function retryStatus(answer: LookupOutcome | undefined): string {
  if (!answer || answer.kind === 'error') return 'unknown';
  if (answer.kind === 'not_found') return 'not_found';
  const { status } = answer.record;
  return serviceStatusKind(status) === 'undocumented' ? 'unknown' : status;
}

/** A result's `retried_as` and `paid_by_retry` (docs/json.md). */
export function chainJson(o: LookupOutcome, ctx: NotFoundContext | undefined) {
  const chain = chainOf(o, ctx);
  if (!chain) return { retried_as: null, paid_by_retry: false };
  const { tail, answer } = chain;
  return {
    retried_as: { reference_id: tail.ref, run_id: tail.runId, status: retryStatus(answer) },
    paid_by_retry: chain.by === 'paid_by_retry',
  };
}

/** How many of the payouts their retry paid. */
export function paidByRetryCount(
  outcomes: readonly LookupOutcome[],
  ctx: NotFoundContext | undefined,
): number {
  return outcomes.filter((o) => chainOf(o, ctx)?.by === 'paid_by_retry').length;
}

/**
 * Asks the service about the last retry of each failed payout's chain that the history holds
 * (one lookup per retry, none for a retry among the references asked): their answers go into
 * `ctx.retries`. Interrupted, the retries not answered are left out, their payouts' own status
 * standing; the caller tells the stop.
 */
export async function lookUpRetries(
  outcomes: readonly LookupOutcome[],
  ctx: NotFoundContext,
  lookUp: (refs: string[]) => Promise<LookupOutcome[]>,
): Promise<void> {
  const answers = new Map<string, LookupOutcome>(outcomes.map((o) => [o.reference_id, o]));
  const refs = [...new Set([...(ctx.retried?.values() ?? [])].map((t) => t.ref))];
  const ask = refs.filter((ref) => !answers.has(ref));
  let got: LookupOutcome[] = [];
  try {
    got = ask.length ? await lookUp(ask) : [];
  } catch (error) {
    if (!(error instanceof LookupsInterrupted)) throw error;
    got = error.done;
  }
  for (const o of got) answers.set(o.reference_id, o);
  ctx.retries = new Map(
    refs.flatMap((ref) => (answers.has(ref) ? [[ref, answers.get(ref)!]] : [])),
  );
}

/** What status's history needs: the service asked, where the history is, how to look up more. */
export interface HistoryAsk {
  service: { sandbox: boolean; serviceKey: string; settings: { baseUrl: string } };
  /** Where the history is; asked only when a payout failed or was not found. */
  from: () => Promise<RunsSource>;
  output: Output;
  /** Looks references up at the service, as the references themselves were. */
  lookUp: (refs: string[]) => Promise<LookupOutcome[]>;
}

/**
 * What the history adds to a status: the service asked and near references, for payouts not
 * found; for each failed or canceled one, the reason, whether this history sent it, and the
 * last retry of its chain with the service's answer about it. Undefined when none needs it.
 */
export async function statusHistory(
  outcomes: LookupOutcome[],
  ask: HistoryAsk,
): Promise<NotFoundContext | undefined> {
  const missing = outcomes.filter((o) => o.kind === 'not_found').map((o) => o.reference_id);
  const failed = outcomes
    .filter(
      (o) =>
        o.kind === 'found' && heldKind({ state: 'done', status: o.record.status }) === 'failed',
    )
    .map((o) => o.reference_id);
  if (!missing.length && !failed.length) return undefined;
  const { service, output } = ask;
  const from = await ask.from();
  const ctx: NotFoundContext = {
    service: service.sandbox ? 'the sandbox' : service.settings.baseUrl,
    near: await nearInHistory(missing, service.serviceKey, from, output),
    ...(await failedInHistory(failed, service.serviceKey, from, output)),
    where: historyPlace(from),
  };
  if (ctx.retried?.size) await lookUpRetries(outcomes, ctx, ask.lookUp);
  return ctx;
}

/**
 * A status report with what the history adds, its exit code counting each payout by its chain
 * (a failed payout its retry paid exits 0). A stop while the retries were looked up is the
 * report's interruption, as one during the lookups is.
 */
export async function withHistory(
  report: StatusReport,
  ask: HistoryAsk & { signal?: AbortSignal },
): Promise<{ history: NotFoundContext | undefined; report: StatusReport }> {
  const history = await statusHistory(report.outcomes, ask);
  if (report.exitCode === ExitCode.interrupted || report.fatal) return { history, report };
  if (ask.signal?.aborted) {
    const fatal = new InterruptedError(
      'interrupted while the retries of failed payouts were looked up: a payout whose retry was not looked up is told by its own status',
    );
    return { history, report: { ...report, exitCode: ExitCode.interrupted, fatal } };
  }
  return { history, report: { ...report, exitCode: chainExitCode(report.outcomes, history) } };
}
