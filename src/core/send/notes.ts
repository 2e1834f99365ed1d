/**
 * The summary's `New recipients:` and `Approval:` lines (docs/approvals.md): who this history
 * never paid at the service, and what the team's approval rule says of the run (its check at
 * send time: approvals/send.ts).
 */
import { CurrencyTotals, moneyText } from '../../money/amount.js';
import type { CurrencyTable } from '../../money/currencies.js';
import { stagedAmountsTo, stagedRecipients } from '../../state/index.js';
import { minorOf } from '../approvals/screen.js';
import {
  type ApprovalNote,
  approvalNoteOf,
  approvalStatusDoc,
  NOTHING_TO_SEND,
} from '../approvals/send.js';
import { totalsDoc } from './render.js';
import type { SendContext } from './staging.js';

/** The summary's lines about the history and the rule. */
export interface SummaryNotes extends ApprovalNote {
  newRecipients: string;
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
  return `${fresh.length}, ${totalsWords(totals, ctx.currencies)}`;
}

/** "EUR 12,400.00, USD 5.00". */
function totalsWords(totals: CurrencyTotals, currencies: CurrencyTable): string {
  return Object.entries(totalsDoc(totals, currencies))
    .map(([cur, t]) => moneyText(cur, t.total))
    .join(', ');
}

/**
 * The notes of a run that sends nothing (every payout was sent earlier): the rule is about
 * what moves, so it does not apply; nor is any approved run used (no `approval` in --json).
 */
export function nothingToSendNotes(files?: SummaryNotes): SummaryNotes {
  return {
    newRecipients: 'none: nothing to send',
    ...NOTHING_TO_SEND,
    status: approvalStatusDoc(NOTHING_TO_SEND),
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
  return { newRecipients, ...note, status: approvalStatusDoc(note) };
}
