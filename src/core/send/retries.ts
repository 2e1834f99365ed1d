/**
 * A payout and its retries are one payout (a chain): a retry file's row, sent under its
 * new_reference_id, retries the reference_id of its row. The rule never to pay twice is kept
 * per chain: a retry is refused when its original was paid, may have been, or was already
 * retried; a re-sent original whose retry was paid is told as paid by that retry.
 */
import type { Problem } from '../../errors.js';
import { addHeld, type HeldRef, heldRef, retriesOf, tailOf } from '../../domain/chain.js';
import type { PriorRow } from '../../domain/history.js';
import { isCanceled } from '../../domain/statuses.js';
import { quoteValue } from '../../errors.js';
import type { StagedRetry } from '../../state/index.js';

/** "run 3f2a… on 2026-11-24 14:02 UTC". */
export function runText(h: Pick<HeldRef, 'runId' | 'at'>): string {
  const at = h.at === null ? '' : ` on ${h.at.slice(0, 16).replace('T', ' ')} UTC`;
  return `run ${h.runId}${at}`;
}

/** What became of a chain's last retry, after "retried as X in run R". */
export function tailText(tail: HeldRef): string {
  switch (tail.kind) {
    case 'success':
      return 'which succeeded';
    case 'pending':
      return 'which is pending at the service';
    case 'failed':
      return `which ${tail.status ?? 'failed'} too: retry ${quoteValue(tail.ref)}, not the original (\`payouts runs show ${tail.runId} --failed-out FILE\`)`;
    default:
      return `whose outcome is not known: \`payouts send\` of that retry file reads it back`;
  }
}

/** "retried as N1 in run R1, then as N2 in run R2", from the first retry to the tail. */
function retriedText(first: HeldRef, tail: HeldRef): string {
  const then =
    tail.ref === first.ref ? '' : `, then as ${quoteValue(tail.ref)} in run ${tail.runId}`;
  return `already retried as ${quoteValue(first.ref)} in run ${first.runId}${then}, ${tailText(tail)}`;
}

/**
 * Where the payout a retry row retries stands in the history, as a send judges it: only an
 * original that failed or was canceled lets the retry go (and then only on the service's
 * word, retry-proof.ts); one the history does not hold is asked of the service too.
 */
export type OriginState =
  | 'failed'
  | 'canceled'
  | 'paid'
  | 'pending'
  | 'in_doubt'
  | 'retried'
  | 'reference_used'
  | 'not_in_history';

/** A retry row's original, judged: its state, whether a send refuses the row, and the words. */
export interface OriginVerdict {
  state: OriginState;
  /** Whether a send refuses the row (exit 2, nothing sent) for what the history holds. */
  refused: boolean;
  /** What follows "retries X": ", which was paid (run … on …)", ", already retried as …". */
  which: string;
  /** What to do about a refused row ('' when `which` already says it). */
  fix: string;
}

/** "already used at this service by another payout (run … on …, retrying "X")". */
function usedText(other: HeldRef): string {
  const retrying = other.retryOf ? `, retrying ${quoteValue(other.retryOf)}` : '';
  return `already used at this service by another payout (${runText(other)}${retrying})`;
}

/** What the history holds of the original a retry row (`own`: the reference it is sent under) retries. */
export function originVerdict(
  retryOf: string,
  own: string,
  chain: Map<string, HeldRef> | undefined,
): OriginVerdict {
  const origin = chain?.get(retryOf);
  if (!chain || !origin) {
    return {
      state: 'not_in_history',
      refused: false,
      which: ', which this history does not hold',
      fix: '',
    };
  }
  if (origin.kind === 'success' || origin.kind === 'pending') {
    const said = origin.kind === 'success' ? 'was paid' : 'is pending at the service';
    const fix = 'a new reference would pay it again; clear this new_reference_id';
    const state = origin.kind === 'success' ? 'paid' : 'pending';
    return { state, refused: true, which: `, which ${said} (${runText(origin)})`, fix };
  }
  if (origin.kind === 'doubt') {
    const which = `, which may have been sent (${runText(origin)}, outcome not known)`;
    const fix = 'read it back first: `payouts send` of the original file does';
    return { state: 'in_doubt', refused: true, which, fix };
  }
  const first = retriesOf(chain, retryOf, own)[0];
  if (first) {
    const tail = tailOf(chain, first.ref) ?? first;
    return { state: 'retried', refused: true, which: `, ${retriedText(first, tail)}`, fix: '' };
  }
  const canceled = isCanceled(origin.status);
  const reason = origin.message ? `: ${quoteValue(origin.message)}` : '';
  return {
    state: canceled ? 'canceled' : 'failed',
    refused: false,
    which: `, which ${canceled ? 'was canceled' : 'failed'} (${runText(origin)}${reason})`,
    fix: '',
  };
}

/** Why the original a retry row retries cannot be retried now, if it cannot. */
function originProblem(
  r: StagedRetry,
  chain: Map<string, HeldRef> | undefined,
): string | undefined {
  const v = originVerdict(r.retry_of, r.reference_id, chain);
  if (!v.refused) return undefined;
  return `retries reference_id ${quoteValue(r.retry_of)}${v.which}${v.fix ? `: ${v.fix}` : ''}`;
}

/**
 * What the history holds of each retry row's original (and of its own reference, which another
 * payout may hold), by row, from a lookup of their chains (the rows a HistoryStore's `prior`
 * gives): what the approver's screen tells of a prepared run's retry rows.
 */
export function retryVerdicts(
  retries: Array<Pick<StagedRetry, 'row' | 'reference_id' | 'retry_of'>>,
  rows: readonly PriorRow[],
): Map<number, OriginVerdict & { usedBy?: HeldRef }> {
  const chains = new Map<number, Map<string, HeldRef>>();
  for (const r of rows) {
    if (r.via === undefined) continue;
    const chain = chains.get(r.row) ?? new Map<string, HeldRef>();
    addHeld(chain, r, r.via);
    chains.set(r.row, chain);
  }
  const own = ownHeld(retries, rows);
  const out = new Map<number, OriginVerdict & { usedBy?: HeldRef }>();
  for (const r of retries) {
    const other = (own.get(r.row) ?? []).find((h) => h.retryOf !== r.retry_of);
    if (other) {
      const which = `, under a new reference_id ${usedText(other)}`;
      out.set(r.row, { state: 'reference_used', refused: true, which, fix: '', usedBy: other });
    } else out.set(r.row, originVerdict(r.retry_of, r.reference_id, chains.get(r.row)));
  }
  return out;
}

/** Where another row is, as a message about a row of `file` names it. */
function placeText(at: { file: string; location: string }, file: string): string {
  return at.file === file ? at.location : `${at.file} ${at.location}`;
}

/** What a check of a run's retry rows needs: the chains by staged row, and what the history holds. */
export interface RetryFacts {
  chains: Map<number, Map<string, HeldRef>>;
  rows: readonly PriorRow[];
}

/** What the history holds of the retry rows' own (new) references, by staged row. */
function ownHeld(
  retries: Array<Pick<StagedRetry, 'row'>>,
  rows: readonly PriorRow[],
): Map<number, HeldRef[]> {
  const retryRows = new Set(retries.map((r) => r.row));
  const own = new Map<number, HeldRef[]>();
  for (const r of rows) {
    if (r.via !== undefined || !retryRows.has(r.row)) continue;
    const list = own.get(r.row) ?? [];
    list.push(heldRef(r, r.payout.reference_id));
    own.set(r.row, list);
  }
  return own;
}

/**
 * The problems of a run's retry rows (see the file's comment), each naming the row and why:
 * a new_reference_id another payout holds, a payout retried twice in the files, or an
 * original paid, in doubt, or already retried.
 */
export function retryProblems(retries: StagedRetry[], facts: RetryFacts): Problem[] {
  const problems: Problem[] = [];
  const first = new Map<string, StagedRetry>();
  const own = ownHeld(retries, facts.rows);
  for (const r of retries) {
    const problem = (message: string) =>
      problems.push({
        file: r.file,
        location: r.location,
        field: 'new_reference_id',
        value: r.reference_id,
        message,
      });
    const other = (own.get(r.row) ?? []).find((h) => h.retryOf !== r.retry_of);
    const twin = first.get(r.retry_of);
    if (!twin) first.set(r.retry_of, r);
    const why = originProblem(r, facts.chains.get(r.row));
    if (r.alsoSent !== undefined) {
      problem(
        `retries reference_id ${quoteValue(r.retry_of)}, which ${placeText(r.alsoSent, r.file)} sends as well: both would be paid; remove one of the two rows`,
      );
    } else if (other) {
      problem(`is ${usedText(other)}: give this row a new_reference_id never used`);
    } else if (twin) {
      problem(
        `retries reference_id ${quoteValue(r.retry_of)}, as ${placeText(twin, r.file)} does: a payout is retried once; remove one of the two rows`,
      );
    } else if (why) problem(why);
  }
  return problems;
}
