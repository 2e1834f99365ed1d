/**
 * The summary's `New recipients:` and `Approval:` lines (docs/approvals.md): who this history
 * never paid at the service, and whether the team's approval rule lets the run go.
 */
import { ApprovalStateError, type UsageError } from '../../errors.js';
import { CurrencyTotals, moneyText } from '../../money/amount.js';
import type { CurrencyTable } from '../../money/currencies.js';
import { shortTime } from '../../output/table.js';
import { stagedAmountsTo, stagedRecipients } from '../../state/index.js';
import type { PreparedRun } from '../../state/pg/approvals.js';
import type { GatedSend } from '../approvals/send.js';
import { minorOf } from '../approvals/screen.js';
import { totalsDoc } from './render.js';

/** The summary's lines about the history and the rule; `approved` is the run that allows it. */
export interface SummaryNotes {
  newRecipients: string;
  approval: string;
  /** The Approval line's word, for a dry run's --json (`approval_status`). */
  state: 'approved' | 'needed' | 'not_needed' | 'not_checked';
  /** What a dry run's --json says of it (approvalStatusDoc). */
  status?: ReturnType<typeof approvalStatusDoc>;
  approved?: PreparedRun;
  /** Set where the rule refuses the run: a send throws it, a dry run only says so. */
  refusal?: ApprovalStateError | UsageError;
  /** What the rule says of the files, kept under nothingToSendNotes: a run decided again may find something to send. */
  files?: SummaryNotes;
}

/** A dry run's --json `approval_status`: what the Approval line says, for a script. */
export function approvalStatusDoc(notes: SummaryNotes) {
  return {
    state: notes.state,
    prepared_run_id:
      notes.approved?.prep_id ??
      (notes.refusal instanceof ApprovalStateError
        ? notes.refusal.approval.prepared_run_id
        : null) ??
      null,
    text: notes.approval,
  };
}

/** What the notes need of a run (`SendRun` fits). */
export type NotedSend = GatedSend;

/**
 * "3, EUR 12,400.00", "none", or "all" when the history holds no
 * run of the service: then no row is read, which a first send of a million rows would feel.
 */
export async function newRecipientsText(run: NotedSend, serviceKey: string): Promise<string> {
  let recipients: string[] = [];
  const paid = await run.paidRecipients(serviceKey, () => {
    recipients = stagedRecipients(run.rows);
    return recipients;
  });
  if (paid === null) {
    return `all: this history has paid no one at this service yet (${totalsWords(run.plan.totals, run.currencies)})`;
  }
  const fresh = recipients.filter((r) => !paid.has(r));
  if (!fresh.length) return 'none: this history paid every recipient before';
  const totals = new CurrencyTotals();
  for (const p of stagedAmountsTo(run.rows, JSON.stringify(fresh)))
    totals.add(p.currency, minorOf(p.amount, p.currency, run.currencies));
  return `${fresh.length}, ${totalsWords(totals, run.currencies)}`;
}

/** "EUR 12,400.00, USD 5.00". */
function totalsWords(totals: CurrencyTotals, currencies: CurrencyTable): string {
  return Object.entries(totalsDoc(totals, currencies))
    .map(([cur, t]) => moneyText(cur, t.total))
    .join(', ');
}

/** "approved: p3f2… by bob at 13:14". */
function approvedText(prep: PreparedRun): string {
  const e = prep.events.find((x) => x.decision === 'approved');
  const at = e ? shortTime(e.at).slice(11) : '?';
  return `approved: ${prep.prep_id} by ${e?.by_role ?? '?'} at ${at}`;
}

/**
 * The notes of a run that sends nothing (every payout was sent earlier): the rule is about
 * what moves, so it does not apply; nor is any approved run used (no `approval` in --json).
 */
export function nothingToSendNotes(files?: SummaryNotes): SummaryNotes {
  const notes: SummaryNotes = {
    newRecipients: 'none: nothing to send',
    approval: 'not needed: nothing to send',
    state: 'not_needed',
  };
  return { ...notes, status: approvalStatusDoc(notes), ...(files ? { files } : {}) };
}

/** The notes of a run to the service `serviceKey` (undefined: no service configured). */
export async function summaryNotes(
  run: NotedSend,
  where: { serviceKey?: string; sandbox: boolean },
): Promise<SummaryNotes> {
  const notes = await notesOf(run, where);
  return { ...notes, status: approvalStatusDoc(notes) };
}

/** The notes, without the document of their status. */
async function notesOf(
  run: NotedSend,
  where: { serviceKey?: string; sandbox: boolean },
): Promise<SummaryNotes> {
  const { serviceKey } = where;
  if (serviceKey === undefined) {
    const none = 'not known: no service is configured';
    return {
      newRecipients: none,
      approval: 'not checked: no service is configured',
      state: 'not_checked',
    };
  }
  const newRecipients = await newRecipientsText(run, serviceKey);
  if (where.sandbox) {
    return {
      newRecipients,
      approval: 'not needed: the sandbox moves no money',
      state: 'not_needed',
    };
  }
  if (!run.deps.stateUrl) {
    return {
      newRecipients,
      approval: "not checked: this history is local (the team's rule lives in its shared history)",
      state: 'not_checked',
    };
  }
  const { approvalStatusOf } = await import('../approvals/send.js');
  const status = await approvalStatusOf(run, serviceKey);
  if (status.kind === 'approved') {
    const approval = approvedText(status.prep);
    return { newRecipients, approval, state: 'approved', approved: status.prep };
  }
  if (status.kind === 'not needed')
    return { newRecipients, approval: `not needed: ${status.why}`, state: 'not_needed' };
  return { newRecipients, ...neededNote(status.refusal) };
}

/** The Approval line of a run the rule refuses, and the refusal a send throws. */
function neededNote(refusal: ApprovalStateError | UsageError) {
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
  return {
    approval: `needed: ${what} (the send will be refused)`,
    state: 'needed' as const,
    refusal,
  };
}
