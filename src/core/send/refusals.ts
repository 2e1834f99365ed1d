/**
 * The words of every refusal of a send (docs/history.md): each refused row's problem, the
 * error that stops the run (exit 2, or 7 when the service did not answer), what the approver's
 * screen says of a retry row's original, and --max-total. The decision (decide.ts) says who is
 * refused and why; this file alone says it.
 */
import type { PayoutRecord } from '../../api/types.js';
import type { HeldRef } from '../../domain/chain.js';
import type { PriorRow } from '../../domain/history.js';
import {
  InputError,
  OutcomeUnknownError,
  type Problem,
  quoteValue,
  UsageError,
} from '../../errors.js';
import { formatMinor, moneyText, parseAmount } from '../../money/amount.js';
import type { CurrencyTable } from '../../money/currencies.js';
import type { StagedRetry } from '../../state/index.js';
import type { LookupOutcome } from '../status/lookup.js';
import type { Ask, Origin, Refusal, RunSplit, SentEarlier } from './fates.js';
import type { MaxTotal } from './options.js';

/** Problems named one by one; the rest are counted. */
const LISTED = 50;

/**
 * A file that sends again payouts the service already failed: a failed payout is final, so
 * its reference_id can never be paid; the person gives each a new one.
 */
export class FailedEarlierError extends InputError {
  override name = 'FailedEarlierError';
  /**
   * `retryFile`: the retry file that holds every refused row, when one does (the person holds
   * the file `runs show --failed-out` writes, and fills its new_reference_id column in).
   */
  constructor(
    problems: Problem[],
    readonly references: string[],
    runIds: string[],
    retryFile?: string,
  ) {
    super(problems.slice(0, LISTED), problems.length);
    const n = references.length;
    const run = runIds.length === 1 ? runIds[0] : 'RUN';
    const them = n === 1 ? 'it a new reference_id' : 'them new reference_ids';
    const show = `payouts runs show ${run} --failed-out FILE`;
    const how =
      retryFile === undefined
        ? `: \`${show}\` writes ${n === 1 ? 'it' : 'them'} to a file with a new_reference_id column to fill in (\`--new-references -R1\` fills it: each reference_id with -R1 added)`
        : ` in the new_reference_id column of ${retryFile}, or have \`${show} --new-references -R1\` write a file with ${n === 1 ? 'it' : 'them'} filled in (each reference_id with -R1 added)`;
    this.message = `${n === 1 ? 'this reference' : `these ${n} references`} already failed at the service: give ${them}${how}; nothing was sent`;
  }
}

/** A retry file whose rows would pay a payout again, or drop one: each row says why. */
export class RetryRefusedError extends InputError {
  override name = 'RetryRefusedError';
  constructor(problems: Problem[]) {
    super(problems.slice(0, LISTED), problems.length);
    const n = problems.length;
    this.message = `${n === 1 ? 'this retry row' : `these ${n} retry rows`} would pay a payout again or leave one unpaid: ${n === 1 ? 'it was' : 'they were'} refused; nothing was sent`;
  }
}

/**
 * Retry rows whose originals this history never sent: a retry of them sent from a machine
 * whose history this is not cannot be seen here, so each row could pay its payout again.
 */
export class OriginalElsewhereError extends InputError {
  override name = 'OriginalElsewhereError';
  constructor(problems: Problem[], history: string) {
    super(problems.slice(0, LISTED), problems.length);
    const n = problems.length;
    const rows =
      n === 1 ? 'this retry row retries a payout' : `these ${n} retry rows retry payouts`;
    this.message = `${rows} that ${history} never sent: a retry of ${n === 1 ? 'it' : 'them'} sent from another machine or folder cannot be seen from here. Send from the history that sent ${n === 1 ? 'it' : 'them'}, or share one history (PAYOUTS_STATE_URL, docs/shared-history.md); if you know no other retry was sent, pass --original-elsewhere (a retry then goes only on the service's word that its original failed); nothing was sent`;
  }
}

/** Where a staged row was read: its file and location. */
export interface Place {
  file: string;
  location: string;
}

/** What the words of a run's refusal need besides the refused rows. */
export interface Telling {
  /** The Client-Id the service was asked with. */
  clientId?: string;
  /** Where this history is, for a person (historyPlace). */
  history?: string;
  /** Where the staged rows are, by row (read only for the rows named). */
  places(rows: number[]): Map<number, Place>;
  /** The files with a new_reference_id column: a person holding one fills it in. */
  retryFiles?: ReadonlySet<string>;
}

/** The error that stops a run: every refused row of one kind (fates.ts `stopping`), each named. */
export function refusalError(refused: Refusal[], telling: Telling): Error {
  const first = refused[0]!;
  switch (first.kind) {
    case 'held-other':
      return new InputError(
        refused.flatMap((r) => (r.kind === 'held-other' ? r.held : [])).map(heldOther),
      );
    case 'other-payout':
      return new InputError(
        refused.map((r) => otherPayout(r as Extract<Refusal, { kind: 'other-payout' }>, telling)),
      );
    case 'unanswered':
      return unanswered(refused as Array<Extract<Refusal, { kind: 'unanswered' }>>);
    case 'failed-earlier':
      return failedEarlier(refused as Array<Extract<Refusal, { kind: 'failed-earlier' }>>, telling);
    case 'unproved':
      return unproved(refused as Array<Extract<Refusal, { kind: 'unproved' }>>);
    case 'original-elsewhere':
      return new OriginalElsewhereError(
        refused.map(retryProblemOf),
        telling.history ?? 'this history',
      );
    default:
      return new RetryRefusedError(refused.map(retryProblemOf));
  }
}

/** The problem of a reference another run sent as a different payout. */
function heldOther(r: PriorRow): Problem {
  return {
    file: `run ${r.run_id}`,
    field: 'reference_id',
    value: r.payout.reference_id,
    message:
      'was already sent to this service with a different amount, currency or recipient: give this payout a new reference_id (see `payouts runs show ' +
      `${r.run_id}\`)`,
  };
}

/** The problem of a reference the service holds as another payout than the one recorded or to send. */
function otherPayout(r: { ask: Ask; why: string }, telling: Telling): Problem {
  const by = r.ask.recordedBy;
  const recorded = by
    ? `run ${by.runId} recorded this payout as sent under Client-Id ${by.clientId}, but `
    : '';
  return {
    file: by ? `run ${by.runId}` : 'the service',
    field: 'reference_id',
    value: r.ask.ref,
    message: `${recorded}the service, asked with Client-Id ${telling.clientId ?? ''}, ${r.why.replace(/^the service /, '')}`,
  };
}

/** Exit 7, nothing sent: the service did not say whether it holds the payouts looked up. */
function unanswered(refused: Array<{ ask: Ask; why: string }>): OutcomeUnknownError {
  const n = refused.length;
  return new OutcomeUnknownError(
    `could not look up ${n} payout${n === 1 ? '' : 's'} at the service before sending (${refused[0]!.why}); nothing was sent: run the same command again when the service answers`,
    refused.map((r) => r.ask.ref),
  );
}

/** "sent by run 3f2a… on 2026-11-24 14:02 UTC", or "found so by --check-service". */
function where(s: SentEarlier): string {
  if (!s.runId) return 'found so by --check-service';
  const at = s.at === null ? '' : ` on ${s.at.slice(0, 16).replace('T', ' ')} UTC`;
  return `sent by run ${s.runId}${at}`;
}

/** Payouts that failed or were canceled at the service in another run, each row named. */
function failedEarlier(
  refused: Array<Extract<Refusal, { kind: 'failed-earlier' }>>,
  telling: Telling,
): FailedEarlierError {
  const places = telling.places(refused.map((r) => r.row));
  const held = telling.retryFiles ?? new Set<string>();
  const problems = refused.map(({ row, ref, earlier, tail }): Problem => {
    const place = places.get(row);
    // Retried already (the retry failed too, or is in doubt): the chain's last link is told.
    const fix = tail
      ? `retried as ${tail.ref} in run ${tail.runId}, ${tailText(tail)}`
      : held.has(place?.file ?? '')
        ? 'fill in its new_reference_id'
        : 'give this row a new reference_id';
    return {
      file: place?.file ?? '(input)',
      location: place?.location,
      field: 'reference_id',
      value: ref,
      message: `already ${earlier.outcome.status} at the service (${where(earlier)}): ${fix}`,
    };
  });
  const runIds = [...new Set(refused.map((r) => r.earlier.runId).filter(Boolean))];
  // One retry file holds every refused row: the person holds the file to fill in.
  const files = new Set(problems.map((p) => p.file));
  const [file] = files;
  const retryFile = files.size === 1 && file !== undefined && held.has(file) ? file : undefined;
  return new FailedEarlierError(
    problems,
    refused.map((r) => r.ref),
    runIds,
    retryFile,
  );
}

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

/** "already used at this service by another payout (run … on …, retrying "X")". */
function usedText(other: HeldRef): string {
  const retrying = other.retryOf ? `, retrying ${quoteValue(other.retryOf)}` : '';
  return `already used at this service by another payout (${runText(other)}${retrying})`;
}

/**
 * What follows "retries X" of a retry row's original, and what to do when it refuses the row:
 * ", which was paid (run … on …)" and "a new reference would pay it again; …".
 */
export function originWords(origin: Origin): { which: string; fix: string } {
  const { link } = origin;
  switch (origin.state) {
    case 'reference_used':
      return { which: `, under a new reference_id ${usedText(origin.usedBy!)}`, fix: '' };
    case 'not_in_history':
      return { which: ', which this history does not hold', fix: '' };
    case 'paid':
    case 'pending': {
      const said = origin.state === 'paid' ? 'was paid' : 'is pending at the service';
      const fix = 'a new reference would pay it again; clear this new_reference_id';
      return { which: `, which ${said} (${runText(link!)})`, fix };
    }
    case 'in_doubt': {
      const which = `, which may have been sent (${runText(link!)}, outcome not known)`;
      return { which, fix: 'read it back first: `payouts send` of the original file does' };
    }
    case 'retried': {
      const { first, tail } = origin as Required<Origin>;
      const then =
        tail.ref === first.ref ? '' : `, then as ${quoteValue(tail.ref)} in run ${tail.runId}`;
      const which = `, already retried as ${quoteValue(first.ref)} in run ${first.runId}${then}, ${tailText(tail)}`;
      return { which, fix: '' };
    }
    default: {
      const reason = link!.message ? `: ${quoteValue(link!.message)}` : '';
      const what = origin.state === 'canceled' ? 'was canceled' : 'failed';
      return { which: `, which ${what} (${runText(link!)}${reason})`, fix: '' };
    }
  }
}

/** Where another row is, as a message about a row of `file` names it. */
function placeText(at: Place, file: string): string {
  return at.file === file ? at.location : `${at.file} ${at.location}`;
}

/** The problem of a refused retry row, naming the row. */
function retryProblemOf(refusal: Refusal): Problem {
  const r = (refusal as { retry: StagedRetry }).retry;
  const row = {
    file: r.file,
    location: r.location,
    field: 'new_reference_id',
    value: r.reference_id,
  };
  return { ...row, message: retryMessage(refusal) };
}

function retryMessage(refusal: Refusal): string {
  if (refusal.kind === 'not-proved')
    return proofProblem(refusal.retry, refusal.answer, refusal.link)!;
  if (refusal.kind === 'original-elsewhere')
    return `retries reference_id ${quoteValue(refusal.retry.retry_of)}, which this history never sent: a retry of it sent elsewhere cannot be seen here, and if one was sent this row pays the payout twice`;
  if (refusal.kind !== 'retry') return '';
  const { retry: r, origin } = refusal;
  const of = `retries reference_id ${quoteValue(r.retry_of)}`;
  switch (refusal.problem) {
    case 'also-sent':
      return `${of}, which ${placeText(r.alsoSent!, r.file)} sends as well: both would be paid; remove one of the two rows`;
    case 'reference-used':
      return `is ${usedText(origin.usedBy!)}: give this row a new_reference_id never used`;
    case 'twin':
      return `${of}, as ${placeText(refusal.twin!, r.file)} does: a payout is retried once; remove one of the two rows`;
    default: {
      const { which, fix } = originWords(origin);
      return `${of}${which}${fix ? `: ${fix}` : ''}`;
    }
  }
}

/** "the history says failed (run …)": what the history holds of a retry's original, if anything. */
function historySays(link: HeldRef | undefined): string {
  if (!link) return 'the history does not know it';
  const said = link.kind === 'doubt' ? 'its outcome is not known' : (link.status ?? link.kind);
  return `the history says ${said} (run ${link.runId})`;
}

/**
 * Why the service's answer about a retry's original refuses the row, if it does: only failed or
 * canceled there lets a retry go (an unanswered lookup is no refusal: the run stops, exit 7).
 */
export function proofProblem(
  r: Pick<StagedRetry, 'retry_of'>,
  outcome: LookupOutcome,
  link: HeldRef | undefined,
): string | undefined {
  const of = `retries reference_id ${quoteValue(r.retry_of)}`;
  const check = `check with \`payouts status ${r.retry_of}\``;
  if (outcome.kind === 'not_found') {
    return `${of}, which the service holds no payout of (${historySays(link)}): a retry goes only on the service's word that the original failed; ${check}`;
  }
  if (outcome.kind !== 'found') return undefined;
  const rec: PayoutRecord = outcome.record;
  if (rec.status === 'failed' || rec.status === 'canceled') return undefined;
  const tx = rec.transaction_id ? ` (transaction ${rec.transaction_id})` : '';
  const held = `${of}, which the service holds as ${quoteValue(rec.status)}${tx}`;
  const history = link?.kind === 'failed' ? `; ${historySays(link)}, which is wrong` : '';
  return rec.status === 'success'
    ? `${held}: a new reference would pay it again${history}; clear this new_reference_id`
    : `${held}: not final, it may still be paid, and a new reference would pay it twice${history}; retry it only once the service says failed or canceled (${check})`;
}

/** Exit 7, nothing sent: the service did not say whether the originals were paid. */
function unproved(refused: Array<{ retry: StagedRetry; why: string }>): OutcomeUnknownError {
  const refs = [...new Set(refused.map((u) => u.retry.retry_of))];
  const n = refs.length;
  const which = n === 1 ? `reference_id ${quoteValue(refs[0]!)}` : `${n} retried references`;
  return new OutcomeUnknownError(
    `could not look up ${which} at the service (${refused[0]!.why}): a retry is sent only once the service says its original failed; nothing was sent: run the same command again when the service answers`,
    refs,
  );
}

/**
 * Checks the --max-total ceilings against what this run may send: the payouts to send now,
 * those to read back and to look up (sent if the service does not have them). InputError.
 */
export function checkMaxTotals(
  split: RunSplit,
  maxTotals: MaxTotal[],
  currencies: CurrencyTable,
): void {
  const mayMove = split.files.without(split.sentEarlier);
  const problems: Problem[] = [];
  for (const limit of maxTotals) {
    const digits = currencies.minorUnits(limit.currency);
    const parsed = parseAmount(limit.amountText, digits);
    if (!parsed.ok || digits === undefined) {
      throw new UsageError(
        `--max-total ${limit.currency}=${limit.amountText}: ${parsed.ok ? 'unknown currency' : parsed.message}`,
      );
    }
    const total = mayMove.minorOf(limit.currency);
    if (total <= parsed.amount.minor) continue;
    const earlier = split.sentEarlier.minorOf(limit.currency);
    const money = (minor: bigint) => moneyText(limit.currency, formatMinor(minor, digits));
    const why = earlier
      ? ` (of ${money(split.files.minorOf(limit.currency))} in the files, ${money(earlier)} was sent earlier)`
      : '';
    problems.push({
      file: '--max-total',
      field: limit.currency,
      value: limit.amountText,
      message: `this run would send ${money(total)}${why}, above the limit of ${money(parsed.amount.minor)}; nothing was sent`,
    });
  }
  if (problems.length) throw new InputError(problems);
}
