/**
 * The summary's `New recipients:` and `Approval:` lines (docs/approvals.md): who this history
 * never paid at the service, and whether the team's approval rule lets the run go.
 */
import { CurrencyTotals, groupThousands } from '../../money/amount.js';
import type { CurrencyTable } from '../../money/currencies.js';
import { shortTime } from '../../output/table.js';
import { stagedPages } from '../../state/index.js';
import type { PreparedRun } from '../../state/pg/approvals.js';
import type { GatedSend } from '../approvals/send.js';
import { minorOf } from '../approvals/screen.js';
import { totalsDoc } from './render.js';

/** The summary's lines about the history and the rule; `approved` is the run that allows it. */
export interface SummaryNotes {
  newRecipients: string;
  approval: string;
  approved?: PreparedRun;
  /** Set where the rule refuses the run: a send throws it, a dry run only says so. */
  refusal?: Error;
}

/** What the notes need of a run beyond the gate: the recipients its history paid before. */
export interface NotedSend extends GatedSend {
  paidRecipients(serviceKey: string, recipients: string[]): Promise<Set<string>>;
}

/** "3, EUR 12,400.00" (grouped on a terminal), or "none". */
export function newRecipientsText(run: NotedSend, paid: Set<string>, grouped: boolean): string {
  const totals = new CurrencyTotals();
  const recipients = new Set<string>();
  for (const p of stagedRows(run)) {
    if (paid.has(p.recipient)) continue;
    recipients.add(p.recipient);
    totals.add(p.currency, minorOf(p.amount, p.currency, run.currencies));
  }
  if (!recipients.size) return 'none: this history paid every recipient before';
  return `${recipients.size}, ${totalsWords(totals, run.currencies, grouped)}`;
}

/** The run's staged payouts, a dry run's too. */
function* stagedRows(run: NotedSend) {
  for (const page of stagedPages(run.rows)) yield* page;
}

/** "EUR 12,400.00, USD 5.00". */
function totalsWords(totals: CurrencyTotals, currencies: CurrencyTable, grouped: boolean): string {
  return Object.entries(totalsDoc(totals, currencies))
    .map(([cur, t]) => `${cur} ${grouped ? groupThousands(t.total) : t.total}`)
    .join(', ');
}

/** "approved: p3f2… by bob at 13:14". */
function approvedText(prep: PreparedRun): string {
  const e = prep.events.find((x) => x.decision === 'approved');
  const at = e ? shortTime(e.at).slice(11) : '?';
  return `approved: ${prep.prep_id} by ${e?.by_role ?? '?'} at ${at}`;
}

/** The notes of a run to the service `serviceKey` (undefined: no service configured). */
export async function summaryNotes(
  run: NotedSend,
  where: { serviceKey?: string; sandbox: boolean },
  grouped: boolean,
): Promise<SummaryNotes> {
  const { serviceKey } = where;
  if (serviceKey === undefined) {
    const none = 'not known: no service is configured';
    return { newRecipients: none, approval: `not checked: no service is configured` };
  }
  const recipients = [...new Set([...stagedRows(run)].map((p) => p.recipient))];
  const paid = await run.paidRecipients(serviceKey, recipients);
  const newRecipients = newRecipientsText(run, paid, grouped);
  if (where.sandbox) return { newRecipients, approval: 'not needed: the sandbox moves no money' };
  if (!run.deps.stateUrl) {
    return {
      newRecipients,
      approval: "not checked: this history is local (the team's rule lives in its shared history)",
    };
  }
  const { approvalStatusOf } = await import('../approvals/send.js');
  const status = await approvalStatusOf(run, serviceKey);
  if (status.kind === 'approved')
    return { newRecipients, approval: approvedText(status.prep), approved: status.prep };
  if (status.kind === 'not needed') return { newRecipients, approval: `not needed: ${status.why}` };
  const a = status.refusal.approval;
  const what =
    a.state === 'rejected'
      ? `run ${a.prepared_run_id} was rejected${a.reason ? `: ${JSON.stringify(a.reason)}` : ''}`
      : a.state === 'expired'
        ? `run ${a.prepared_run_id} expired`
        : a.prepared_run_id
          ? `run ${a.prepared_run_id} awaits another person's approval`
          : 'no approved run holds these payouts';
  return {
    newRecipients,
    approval: `needed: ${what} (the send will be refused)`,
    refusal: status.refusal,
  };
}
