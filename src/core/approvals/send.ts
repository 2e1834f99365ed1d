/**
 * The approval check at send time (docs/approvals.md): the summary's `New recipients:` (who
 * this history never paid at the service) and `Approval:` (what the team's rule says of the
 * send's payouts, its --json `approval_status`) lines; the refusal of a run that would move
 * money without the approval the rule asks (before any lock or lookup when it moves whatever
 * the service answers, and again once decided); the claim of the approved run under the
 * lock; and the `approval` of the send's --json document.
 */
import type { PayoutRequest } from '../../api/types.js';
import { ApprovalStateError, type UsageError } from '../../errors.js';
import { CurrencyTotals, moneyText } from '../../money/amount.js';
import type { CurrencyTable } from '../../money/currencies.js';
import { shortTime } from '../../output/table.js';
import {
  pushedHistory,
  type RunIntake,
  runIdFor,
  stagedAmountsTo,
  stagedPages,
  stagedPayouts,
  stagedRecipients,
  stagedRetries,
} from '../../state/index.js';
import type { PreparedRun } from '../../state/pg/approvals.js';
import { moves, type RunSplit } from '../send/fates.js';
import { totalsDoc } from '../send/render.js';
import type { SendContext } from '../send/staging.js';
import {
  type ApprovalStatus,
  approvalStatus,
  claimApproval,
  type GatedRun,
  prepareCommandOf,
} from './gate.js';
import type { SharedAt } from './common.js';
import { minorOf } from './screen.js';
import { type Comparing, type SeriesNote, seriesNoteOf } from '../series-note.js';
import { displayText } from '../../output/display.js';

/** What the rule says of a run: the Approval: line, its word, and the run that allows it. */
export interface ApprovalNote {
  approval: string;
  /** The Approval line's word, for --json (`approval_status`). */
  state: 'approved' | 'needed' | 'not_needed' | 'not_checked';
  approved?: PreparedRun;
  /** Set where the rule refuses the run: a send throws it, a dry run only says so. */
  refusal?: ApprovalStateError | UsageError;
  /** The summary leaves the line out: it would tell nothing (a person who has no team). */
  silent?: boolean;
}

/** A run's --json `approval_status`: what the Approval line says, for a script. */
export function approvalStatusDoc(note: ApprovalNote) {
  return {
    state: note.state,
    prepared_run_id:
      note.approved?.prep_id ??
      (note.refusal instanceof ApprovalStateError ? note.refusal.approval.prepared_run_id : null) ??
      null,
    text: note.approval,
  };
}

/** The note of a run that sends nothing (every payout was sent earlier): the rule is about what moves. */
export const NOTHING_TO_SEND: ApprovalNote = {
  approval: 'not needed: nothing to send',
  state: 'not_needed',
};

/**
 * The note of a run to the service `serviceKey`: not checked without a shared history (the
 * team's rule lives there), not needed in the sandbox; else the rule's word on its payouts.
 */
export async function approvalNoteOf(
  ctx: SendContext,
  where: { serviceKey: string; sandbox: boolean },
): Promise<ApprovalNote> {
  if (where.sandbox)
    return { approval: 'not needed: the sandbox moves no money', state: 'not_needed' };
  if (!ctx.deps.stateUrl) return localNote(ctx);
  return noteOf(await approvalStatus(gated(ctx, where.serviceKey)));
}

/**
 * A run on a state folder's history, where no rule is kept: the summary says so only when the
 * folder's history was copied into a shared one since (its team's rule lives there, and this
 * run goes around it); to a person who has no team the line would say nothing.
 */
function localNote(ctx: SendContext): ApprovalNote {
  const note: ApprovalNote = {
    approval: "not checked: this history is local (the team's rule lives in its shared history)",
    state: 'not_checked',
  };
  if (!pushedHistory(ctx.staging.rows, ctx.deps.stateDir)) return { ...note, silent: true };
  return {
    ...note,
    approval:
      "not checked: this history is local, and was copied into a shared one (state push), where the team's rule lives: send with PAYOUTS_STATE_URL",
  };
}

/** The Approval: line of what the rule says of a send: approved, not needed, or needed. */
export function noteOf(status: ApprovalStatus): ApprovalNote {
  if (status.kind === 'approved') {
    return { approval: approvedText(status.prep), state: 'approved', approved: status.prep };
  }
  if (status.kind === 'not needed')
    return { approval: `not needed: ${status.why}`, state: 'not_needed' };
  return neededNote(status);
}

/** "approved: p3f2… by bob at 13:14", "… by bob at 13:14 and carol at 13:20": every approver. */
function approvedText(prep: PreparedRun): string {
  const by = prep.events
    .filter((x) => x.decision === 'approved')
    .map((e) => `${e.by_role} at ${shortTime(e.at).slice(11)}`);
  return `approved: ${prep.prep_id} by ${by.length ? by.join(' and ') : '?'}`;
}

/** The note of a run the rule refuses, and the refusal a send throws. */
function neededNote(status: Extract<ApprovalStatus, { kind: 'needed' }>): ApprovalNote {
  const { refusal } = status;
  const a = refusal instanceof ApprovalStateError ? refusal.approval : undefined;
  const what = !a
    ? 'these payouts go with another service, batch or webhook than the approved run'
    : a.state === 'rejected'
      ? `run ${a.prepared_run_id} was rejected${a.reason ? `: ${JSON.stringify(a.reason)}` : ''}`
      : a.state === 'expired'
        ? `run ${a.prepared_run_id} expired`
        : a.prepared_run_id
          ? `run ${a.prepared_run_id} awaits another person's approval`
          : 'no approved run holds these payouts';
  return { approval: `needed: ${what} (the send will be refused)`, state: 'needed', refusal };
}

/**
 * Refuses now, before any lock or lookup, a run the rule refuses that moves money whatever the
 * service answers (the rule is about what moves: a run that may send nothing waits for them).
 */
export function refuseEarly(note: ApprovalNote, split: RunSplit): void {
  if (note.refusal && moves(split)) throw note.refusal;
}

/** Never sent without the approval the rule asks, whatever was read or decided before. */
export function refuseUnapproved(note: ApprovalNote, sendsNothing: boolean): void {
  if (note.refusal && !sendsNothing) throw note.refusal;
}

/**
 * Before anything is sent, under the lock: records that this run sends its approved run, once
 * (`claimApproval`); a UsageError, nothing sent, when the approval may not send it.
 */
export function claimRun(
  ctx: SendContext,
  serviceKey: string,
  approved: PreparedRun,
  sendsNothing: boolean,
): Promise<void> {
  return claimApproval(sharedOf(ctx), approved, {
    runId: runIdFor(serviceKey, ctx.plan.inputHash),
    sendsNothing,
  });
}

/** The `approval` of a send's --json document: the prepared run, who approved it and when. */
export function approvalDocOf(prep: PreparedRun) {
  const approvals = prep.events.filter((e) => e.decision === 'approved');
  return {
    prepared_run_id: prep.prep_id,
    approvers: approvals.map((e) => ({
      role: e.by_role,
      os_user: e.os_user,
      host: e.host,
      at: e.at,
    })),
    approved_at: approvals.at(-1)?.at ?? null,
  };
}

/** A dry run's staged payouts (no descriptions kept), as the gate takes them. */
function stagedOfDryRun(rows: RunIntake): Array<{ row: number; payout: PayoutRequest }> {
  const out: Array<{ row: number; payout: PayoutRequest }> = [];
  // One page: a dry run's rows are a view, which a page at a time would read again and again.
  for (const page of stagedPages(rows, Number.MAX_SAFE_INTEGER)) {
    for (const { row, reference_id, amount, currency, recipient } of page) {
      out.push({ row, payout: { reference_id, amount, currency, recipient } });
    }
  }
  return out;
}

/** The options a next step's send repeats: how the files were read, and the service's. */
export function sendArgsOf(ctx: SendContext): string[] {
  return [...(ctx.deps.fileArgs ?? []), ...(ctx.deps.serviceArgs ?? [])];
}

/** The send's shared history: its session there (the URL of one when none is open). */
export function sharedOf(ctx: SendContext): SharedAt {
  return ctx.staging.shared ?? ctx.deps.stateUrl!;
}

/** What the gate needs of a run: its payouts (a retry's with its original), totals, and the command that prepares it. */
export function gated(ctx: SendContext, serviceKey: string): GatedRun {
  const { opts, plan, staging } = ctx;
  return {
    at: sharedOf(ctx),
    serviceKey,
    // Read only once the rule is known to apply.
    get payouts() {
      if (opts.dryRun) return stagedOfDryRun(staging.rows);
      const retryOf = new Map(stagedRetries(staging.rows).map((r) => [r.row, r.retry_of]));
      return stagedPayouts(staging.rows).map((s) => ({ ...s, retry_of: retryOf.get(s.row) }));
    },
    totals: plan.totals,
    currencies: ctx.currencies,
    prepareCommand: prepareCommandOf(opts.files, sendArgsOf(ctx)),
    batchReference: plan.batchReference,
    webhookUrl: plan.webhookUrl,
    approvedPrep: ctx.deps.approvedName?.replace(/^approved:/, ''),
    withoutDescriptions: opts.dryRun,
  };
}

/** The summary's lines about the history and the rule. */
export interface SummaryNotes extends ApprovalNote {
  newRecipients: string;
  /** What changed since the series' last run, and of each retry against its original. */
  changes?: SeriesNote;
  /** What the --json document says of the Approval line (`approval_status`). */
  status: ReturnType<typeof approvalStatusDoc>;
  /** What the rule says of the files, kept under nothingToSendNotes: a run decided again may find something to send. */
  files?: SummaryNotes;
}

/**
 * "3, EUR 12,400.00", "none", or "all" when the history holds no
 * run of the service: then no row is read, which a first send of a million rows would feel.
 */
export async function newRecipientsText(ctx: SendContext, serviceKey: string): Promise<string> {
  const { rows, history } = ctx.staging;
  let recipients: string[] = [];
  const paid = await history.paidRecipients(rows, serviceKey, () => {
    recipients = stagedRecipients(rows);
    return recipients;
  });
  if (paid === null) {
    return `all: this history has paid no one at this service yet (${totalsWords(ctx.plan.totals, ctx.currencies)})`;
  }
  const fresh = recipients.filter((r) => !paid.has(r));
  if (!fresh.length) return 'none: this history paid every recipient before';
  const totals = new CurrencyTotals();
  for (const p of stagedAmountsTo(rows, JSON.stringify(fresh)))
    totals.add(p.currency, minorOf(p.amount, p.currency, ctx.currencies));
  // Named, as the approver's screen names them: a person checks each new address.
  const named = fresh.slice(0, NAMED).map(displayText).join(', ');
  const more = fresh.length > NAMED ? ` and ${fresh.length - NAMED} more` : '';
  return `${fresh.length}, ${totalsWords(totals, ctx.currencies)}: ${named}${more}`;
}

/** New recipients a summary names; the rest are counted. */
const NAMED = 10;

/** "EUR 12,400.00, USD 5.00". */
function totalsWords(totals: CurrencyTotals, currencies: CurrencyTable): string {
  return Object.entries(totalsDoc(totals, currencies))
    .map(([cur, t]) => moneyText(cur, t.total))
    .join(', ');
}

/**
 * The notes of a run that sends nothing (every payout was sent earlier): the rule is about
 * what moves, so it does not apply; nor is any approved run used (no `approval` in --json).
 * A person is told so only where `rule`, the rule's word on the files, would ask something.
 */
export function nothingToSendNotes(
  files?: SummaryNotes,
  rule: ApprovalNote | undefined = files,
): SummaryNotes {
  const ruled = rule?.state === 'needed' || rule?.state === 'approved';
  return {
    newRecipients: 'none: nothing to send',
    ...NOTHING_TO_SEND,
    status: approvalStatusDoc(NOTHING_TO_SEND),
    ...(ruled ? {} : { silent: true }),
    ...(files ? { files } : {}),
  };
}

/** The notes of a run to the service `serviceKey` (undefined: no service configured). */
export async function summaryNotes(
  ctx: SendContext,
  where: { serviceKey?: string; sandbox: boolean },
): Promise<SummaryNotes> {
  const { serviceKey } = where;
  if (serviceKey === undefined) {
    const note: ApprovalNote = {
      approval: 'not checked: no service is configured',
      state: 'not_checked',
    };
    const newRecipients = 'not known: no service is configured';
    return { newRecipients, ...note, status: approvalStatusDoc(note) };
  }
  const newRecipients = await newRecipientsText(ctx, serviceKey);
  const note = await approvalNoteOf(ctx, { serviceKey, sandbox: where.sandbox });
  const changes = await seriesNoteOf(comparingOf(ctx, serviceKey));
  return {
    newRecipients,
    ...(changes ? { changes } : {}),
    ...note,
    status: approvalStatusDoc(note),
  };
}

/** What a summary compares: the staged rows and the run, against the service's history. */
function comparingOf(ctx: SendContext, serviceKey: string): Comparing {
  const { plan, staging } = ctx;
  return {
    history: staging.history,
    rows: staging.rows,
    serviceKey,
    run: {
      batch_reference: plan.batchReference ?? null,
      inputs: plan.sources.map((s) => s.name),
      inputHash: plan.inputHash,
      payoutCount: plan.payoutCount,
    },
    currencies: ctx.currencies,
  };
}
