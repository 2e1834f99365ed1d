/** Prepared runs (docs/approvals.md) as `payouts runs` and `runs show` list them. */
import { CurrencyTable } from '../../money/currencies.js';
import { displayText } from '../../output/display.js';
import type { Output } from '../../output/output.js';
import { shortTime } from '../../output/table.js';
import { formatMinor, parseAmount } from '../../money/amount.js';
import {
  findPrepared,
  listPrepared,
  type PreparedRun,
  sessionRole,
} from '../../state/pg/approvals.js';
import { preparedFigures, withFigures } from '../../state/pg/prepared-figures.js';
import type { PgHistory } from '../../state/pg/history.js';
import { preparedRowTotals } from '../../state/pg/prepared-views.js';
import { showScreen } from '../approvals/approve.js';
import { approversOf, eventLines, type SharedAt, withShared } from '../approvals/common.js';
import { preparedScreen, sendingRuns, shownState } from '../approvals/screen.js';
import { reviewsOf, showReviewed } from '../approvals/review.js';
import { preparedDoc, preparedHead } from '../approvals/screen-doc.js';
import { totalsText } from '../approvals/screen-view.js';

/** A prepared run as listed: its head, with the figures of its payout rows and its state. */
export type ListedPrepared = ReturnType<typeof preparedHead>;

/** Sums of decimal texts as PostgreSQL gave them, in the currency's digits. */
function normalTotal(total: string, currency: string, currencies: CurrencyTable): string {
  const digits = currencies.minorUnits(currency) ?? (total.split('.')[1] ?? '').length;
  const parsed = parseAmount(total, digits);
  return parsed.ok ? formatMinor(parsed.amount.minor, digits) : total;
}

/** Every prepared run of a shared history as listed, the newest first. */
async function listed(h: PgHistory): Promise<Array<{ run: PreparedRun; doc: ListedPrepared }>> {
  const currencies = new CurrencyTable();
  const [all, sums] = await Promise.all([listPrepared(h), preparedRowTotals(h)]);
  const runs = await sendingRuns(h, all);
  return all.map((p) => {
    const totals: Record<string, { count: number; total: string }> = {};
    let count = 0;
    for (const t of sums.filter((x) => x.prep === p.id)) {
      totals[t.currency] = { count: t.count, total: normalTotal(t.total, t.currency, currencies) };
      count += t.count;
    }
    return { run: p, doc: preparedHead(p, shownState(p, runs), { payout_count: count, totals }) };
  });
}

/** Every prepared run of a shared history, the newest first, as `runs --json` lists them. */
export function preparedRuns(at: SharedAt): Promise<ListedPrepared[]> {
  return withShared(at, async (h) => (await listed(h)).map((l) => l.doc));
}

/** What awaits a role's approval: the role, and each prepared run with its approvals so far. */
export interface Awaiting {
  role: string;
  runs: Array<ListedPrepared & { approvals: { given: number; needed: number } }>;
}

/**
 * The prepared runs awaiting the reader's approval, the newest first: neither decided,
 * expired nor sent, not prepared by the reader's role and not approved by it already.
 */
export function awaitingApproval(url: string): Promise<Awaiting> {
  return withShared(url, async (h) => {
    const [role, all] = await Promise.all([sessionRole(h), listed(h)]);
    const runs = all
      .filter(({ run, doc }) => doc.state === 'prepared' && run.prepared_by !== role)
      .filter(({ run }) => !approversOf(run).includes(role))
      .map(({ run, doc }) => ({
        ...doc,
        approvals: { given: approversOf(run).length, needed: run.approvers_needed },
      }));
    return { role, runs };
  });
}

/** The prepared run whose approval run `runId` sent, if any, and as listed. */
export function approvalOf(
  at: SharedAt,
  runId: string,
): Promise<{ run: PreparedRun; doc: ListedPrepared } | undefined> {
  return withShared(at, async (h) => {
    const all = await listed(h);
    return all.find((l) => l.run.events.some((e) => e.decision === 'sent' && e.run_id === runId));
  });
}

/** Who made the latest decision on a prepared run, for the list, and a rejection's reason. */
function byText(p: ListedPrepared): string {
  const last = p.events.at(-1);
  if (last?.decision === 'rejected' && last.reason) {
    return ` by ${last.by.role}: ${JSON.stringify(last.reason)}`;
  }
  if (last) return ` by ${last.by.role}`;
  return p.state === 'prepared' ? ` by ${p.prepared_by.role}` : '';
}

/** The prepared runs' table of `payouts runs` (after the runs') and `approvals list`. */
export async function printPreparedTable(
  prepared: Array<ListedPrepared & { approvals?: Awaiting['runs'][number]['approvals'] }>,
  output: Output,
  heading = 'Prepared runs (payouts approve RUN):',
): Promise<void> {
  if (!prepared.length) return;
  const grouped = output.stdoutIsTerminal;
  const rows = prepared.map((p) => [
    p.prepared_run_id,
    shortTime(p.created_at),
    displayText(p.prepared_by.role),
    p.approvals
      ? `${p.approvals.given} of ${p.approvals.needed} approvals, expires ${shortTime(p.expires_at)}`
      : `${p.state}${displayText(byText(p))}`,
    String(p.payout_count),
    totalsText(p.totals, grouped),
    displayText(p.note ?? ''),
  ]);
  output.printAside(heading);
  output.print(
    await output.table(
      ['prepared run', 'prepared (UTC)', 'prepared by', 'state', 'payouts', 'totals', 'note'],
      rows,
      { wrap: ['state', 'totals', 'note'], below: ['note'] },
    ),
  );
}

/**
 * `runs show` of a prepared run (the approver's screen; a decided one as it was reviewed and
 * as it is now); false when no prepared run has the id. `baseUrl`: the reader's, the spelling
 * of the service shown when it is the run's.
 */
export async function showPrepared(
  at: SharedAt,
  id: string,
  output: Output,
  opts: { all?: boolean; baseUrl?: string } = {},
): Promise<boolean> {
  const shown = await withShared(at, async (h) => {
    // The figures shown are computed from the run's payouts (preparedFigures), not its own row.
    const p = await findPrepared(h, id);
    if (!p) return undefined;
    const s = await preparedScreen(h, withFigures(p, await preparedFigures(h, p)), opts.baseUrl);
    return { s, reviews: await reviewsOf(h, p.id) };
  });
  if (!shown) return false;
  const { s, reviews } = shown;
  if (output.json) {
    output.document(preparedDoc(s, reviews));
    return true;
  }
  const all = Boolean(opts.all);
  if (reviews.length) await showReviewed(s, reviews, output, { all });
  else await showScreen(s, output, { all, aside: false });
  for (const line of eventLines(s.run)) output.printAside(displayText(line));
  return true;
}
