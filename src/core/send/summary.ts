/** The summary before a send (and a dry run's), the question, and the dry run's --json document. */
import type { ChalkInstance } from 'chalk';
import { serializeCreateRequest } from '../../api/body.js';
import type { CreateRequest } from '../../api/types.js';
import { type CurrencyTotals, groupThousands } from '../../money/amount.js';
import type { CurrencyTable } from '../../money/currencies.js';
import { count, displayText } from '../../output/display.js';
import { RawNumber } from '../../output/output.js';
import { sendDocHead } from '../documents.js';
import type { Renames } from '../../input/types.js';
import { historyLabel, redactWord } from '../../state/pg/url.js';
import type { Ask, Decision, EarlierRun, RunSplit } from './fates.js';
import { foundOf } from './fates.js';
import { concurrencyOf, type MaxTotal } from './options.js';
import type { RunPlan } from './plan.js';
import { totalsDoc, totalsText } from './render.js';
import type { SendContext } from './staging.js';

/** Where the run goes, for the summary. */
export interface Destination {
  baseUrl?: string;
  profile?: string;
  sandbox: boolean;
  chunkSize: number;
  concurrency: { initial: number; max: number };
  /** Where earlier sends are looked up: `shared (postgres://…@host/db)` or `this folder only`. */
  history: string;
}

/** Where a run goes, for its summary. */
export function destinationOf(
  ctx: Pick<SendContext, 'opts' | 'deps'>,
  where: { baseUrl?: string; profile?: string },
): Destination {
  const { opts, deps } = ctx;
  return {
    ...where,
    sandbox: opts.sandbox,
    chunkSize: opts.chunkSize,
    concurrency: concurrencyOf(opts),
    history: deps.stateUrl && !opts.sandbox ? historyLabel(deps.stateUrl) : 'this folder only',
  };
}

/** How many payouts a dry run names of those the service holds; the rest are counted. */
const NAMED = 10;

/**
 * What --dry-run --check-service found: which of the payouts looked up the service holds (a
 * send counts them as sent earlier, whoever recorded them), or that it holds none.
 */
export function heldAtServiceLine(asked: Ask[], decision: Decision): string {
  const looked = asked.filter((a) => a.payout).length;
  if (looked === 0)
    return 'Nothing to look up at the service: earlier runs of this history hold every payout.';
  const found = foundOf(decision, asked);
  if (found.length === 0) return `The service holds none of the ${payouts(looked)} looked up.`;
  const named = found
    .slice(0, NAMED)
    .map((f) => `${displayText(f.ref)} (${f.earlier.outcome.status})`);
  const more = found.length > NAMED ? ` and ${found.length - NAMED} more` : '';
  return `The service holds ${found.length} of the ${payouts(looked)} looked up: ${named.join(', ')}${more}. A send counts them as sent earlier.`;
}

/** A dry run without --check-service says what a send looks up first: the originals of its retry rows. */
export function notLookedUpLine(decision: Decision): string | undefined {
  const originals = new Set<string>();
  for (const f of decision.fates.values()) {
    if ((f.kind === 'send' || f.kind === 'read-back') && f.unasked) originals.add(f.unasked);
  }
  const n = originals.size;
  if (!n) return undefined;
  const them = n === 1 ? 'the payout a retry row retries' : `the ${n} payouts the retry rows retry`;
  return `Not looked up: a send first asks the service whether ${them} failed (--check-service asks now).`;
}

/** What the summary before a send (or a dry run) shows. */
export interface SummaryView {
  plan: RunPlan;
  /** Null when the service, and so what it was sent earlier, is not known (a dry run). */
  split: RunSplit | null;
  dest: Destination;
  maxTotals: MaxTotal[];
  /** The history's new recipients and the approval rule's word (notes.ts). */
  notes?: {
    newRecipients: string;
    approval: string;
    status?: unknown;
    silent?: boolean;
    /** What changed since the series' last run (series-note.ts): lines, and --json's keys. */
    changes?: { lines: Array<[string, string]>; doc: object };
  };
}

/** Width of the summary's labels. */
const LABEL = 16;

/** "1 payout", "2 payouts". */
export function payouts(n: number): string {
  return `${count(n, 'payout')}`;
}

/** How many requests go at once: "4 at a time", or "4 at first, up to 16 as the service allows". */
function pace(c: { initial: number; max: number }): string {
  return c.initial === c.max
    ? `${c.max} at a time`
    : `${c.initial} at a time at first, up to ${c.max} as the service allows`;
}

/** An ISO time as "2026-11-24 14:02 UTC". */
function when(at: string | null): string {
  return at === null ? 'at a time not recorded' : `on ${at.slice(0, 16).replace('T', ' ')} UTC`;
}

/** "run 3f2a… on 2026-11-24 14:02 UTC", or the first three runs with their counts. */
export function earlierRunsText(runs: EarlierRun[]): string {
  const first = runs[0];
  // A payout found at the service has no run of this history behind it.
  const run = (r: EarlierRun) => (r.runId ? `run ${r.runId} ${when(r.at)}` : 'the service itself');
  if (first && runs.length === 1) return run(first);
  const shown = runs.slice(0, 3).map((r) => `${run(r)} (${r.count})`);
  const more = runs.length - shown.length;
  return `${shown.join(', ')}${more ? ` and ${count(more, 'more run')}` : ''}`;
}

/** One part of the split: its label, its totals (null: not known) and a note. */
type Part = [label: string, totals: CurrencyTotals | null, note: string];

/** The parts of the split to show: the files, then what is sent earlier, read back and sent now. */
function partsOf(view: SummaryView): Part[] {
  const { plan, split } = view;
  if (!split)
    return [
      ['Totals:', plan.totals, ''],
      ['Sent earlier:', null, ''],
    ];
  const parts: Part[] = [['Totals:', split.files, '']];
  // A payout that failed earlier is never called sent: its reference_id is used up.
  if (split.failedEarlier.count) {
    const sent = split.sentEarlier.without(split.failedEarlier);
    if (sent.count) parts.push(['Sent earlier:', sent, 'not sent again']);
    parts.push(['Failed earlier:', split.failedEarlier, 'each needs a new reference_id']);
  } else parts.push(['Sent earlier:', split.sentEarlier, 'not sent again']);
  if (split.readBack.count) {
    parts.push(['To read back:', split.readBack, 'sent only if the service does not have them']);
  }
  if (split.toSend.count !== split.files.count) parts.push(['To send now:', split.toSend, '']);
  return parts;
}

/** The totals of the split, one line per part and currency, amounts aligned on one column. */
function splitLines(view: SummaryView, currencies: CurrencyTable, c: ChalkInstance): string[] {
  const parts = partsOf(view).map(([label, totals, note]) => ({
    label,
    note,
    rows: totals && Object.entries(totalsDoc(totals, currencies)),
  }));
  const width = Math.max(
    1,
    ...parts.flatMap((p) => p.rows ?? []).map(([, t]) => groupThousands(t.total).length),
  );
  const lines = [field('Payouts:', String(view.plan.payoutCount), c)];
  // A workbook's sheet is named: the one read may not be the one the user looked at.
  (view.plan.sheets ?? []).forEach(({ file, sheet }, i) => {
    const text = `${displayText(sheet)} of ${displayText(file)}`;
    lines.push(i ? ' '.repeat(LABEL) + text : field('Sheet:', text, c));
  });
  const renamed = view.plan.renamed;
  if (renamed) lines.push(field('New refs:', renamedText(renamed), c));
  // The runs behind what was sent (or failed) earlier follow the last of those parts.
  const byAfter = view.split?.failedEarlier.count ? 'Failed earlier:' : 'Sent earlier:';
  for (const p of parts) {
    if (p.rows === null) lines.push(field(p.label, 'not known: no service is configured', c));
    else if (p.rows.length === 0) lines.push(field(p.label, 'none', c));
    p.rows?.forEach(([cur, t], i) => {
      const note = p.note && i === 0 ? `; ${p.note}` : '';
      const text = `${cur} ${groupThousands(t.total).padStart(width)}  (${payouts(t.count)}${note})`;
      lines.push(i ? ' '.repeat(LABEL) + text : field(p.label, text, c));
    });
    if (p.label === byAfter && view.split?.earlierRuns.length) {
      lines.push(`${' '.repeat(LABEL)}by ${displayText(earlierRunsText(view.split.earlierRuns))}`);
    }
    if (p.label === 'Sent earlier:' && view.split?.retried.count) {
      lines.push(field('Retried:', retriedText(view.split), c));
    }
  }
  const { split } = view;
  if (!split || split.toSend.count === split.files.count) {
    const n = view.plan.payoutCount;
    lines.push(field('To send now:', n === 1 ? 'the payout' : `all ${n} payouts`, c));
  }
  return lines;
}

/** "3, paid as NEW-1, NEW-2 and 1 more": failed payouts a retry paid (or holds pending). */
export function retriedText(split: RunSplit): string {
  const { count, paid, pending } = split.retried;
  const more = count - paid.length - pending.length;
  const parts = [
    paid.length && `paid as ${paid.map(displayText).join(', ')}`,
    pending.length && `pending as ${pending.map(displayText).join(', ')}`,
  ].filter(Boolean);
  return `${count}, ${parts.join('; ')}${more ? ` and ${more} more` : ''}`;
}

/**
 * "2 not in this history, sent with --original-elsewhere: NOV-0047 (retried as NOV-0047-R1), …":
 * the retry rows whose original this history never sent, which the option let through.
 */
function elsewhereText(split: RunSplit): string {
  const shown = split.elsewhere
    .slice(0, 3)
    .map((r) => `${displayText(r.retry_of)} (retried as ${displayText(r.reference_id)})`);
  const more = split.elsewhere.length - shown.length;
  return `${split.elsewhere.length} not in this history, sent with --original-elsewhere once the service says each failed: ${shown.join(', ')}${more ? ` and ${more} more` : ''}`;
}

/** "3 rows under their new_reference_id: A -> A-R1, B -> B-R1, C -> C-R1", for a person to check. */
function renamedText(r: Renames): string {
  const pairs = r.examples.map(([from, to]) => `${displayText(from)} -> ${displayText(to)}`);
  const more = r.count - r.examples.length;
  const rows = r.count === 1 ? '1 row' : `${r.count} rows`;
  return `${rows} under their new_reference_id: ${pairs.join(', ')}${more ? ` and ${more} more` : ''}`;
}

/** A label and its value, aligned with the split's rows. */
function field(label: string, value: string, c: ChalkInstance): string {
  return `${c.bold(label)}${' '.repeat(Math.max(1, LABEL - label.length))}${value}`;
}

/** The summary shown before sending and by --dry-run: what the files hold and what will move. */
export function summaryText(
  view: SummaryView,
  currencies: CurrencyTable,
  c: ChalkInstance,
): string {
  const { plan, split, dest } = view;
  const lines: string[] = [];
  if (dest.sandbox)
    lines.push(c.bold.yellow('SANDBOX: a local rehearsal service; no money moves.'));
  lines.push(...splitLines(view, currencies, c));
  const requests = split ? split.requestCount : plan.requestCount;
  lines.push(
    field(
      'Requests:',
      `${requests} (up to ${count(dest.chunkSize, 'payout')} each, ${pace(dest.concurrency)})`,
      c,
    ),
  );
  if (view.maxTotals.length) {
    const limits = view.maxTotals.map((m) => `${m.currency} ${m.amountText}`).join(', ');
    lines.push(field('Limit:', `--max-total ${limits}, on what this run sends`, c));
  }
  // The batch reference and webhook URL may come from an input file: shown escaped.
  const shown = (v: string | undefined, none: string) => (v === undefined ? none : displayText(v));
  lines.push(field('Service:', shown(dest.baseUrl, '(not set)'), c));
  lines.push(field('Profile:', shown(dest.profile, '(not set)'), c));
  lines.push(field('History:', dest.history, c));
  if (split?.elsewhere.length) lines.push(field('Originals:', elsewhereText(split), c));
  if (view.notes) {
    lines.push(field('New recipients:', view.notes.newRecipients, c));
    for (const [label, value] of view.notes.changes?.lines ?? [])
      lines.push(label ? field(label, value, c) : `${' '.repeat(LABEL)}${value}`);
    if (!view.notes.silent) lines.push(field('Approval:', view.notes.approval, c));
  }
  lines.push(field('Batch:', shown(plan.batchReference, '(none: the service assigns one)'), c));
  // A webhook URL's password (https://user:token@…) is never shown, as no URL's is.
  const webhook = plan.webhookUrl === undefined ? undefined : redactWord(plan.webhookUrl);
  lines.push(field('Webhook:', shown(webhook, '(account default)'), c));
  return lines.join('\n');
}

/**
 * The confirmation question, naming what will move: "Send 1200 payouts (EUR 579,071.29)?
 * They cannot be taken back."
 */
export function questionText(split: RunSplit, currencies: CurrencyTable): string {
  const send = split.toSend;
  const back = split.readBack;
  const sendText = `${payouts(send.count)} (${totalsText(send, currencies)})`;
  const backText = `${payouts(back.count)} to read back (${totalsText(back, currencies)})`;
  let what = `Send ${sendText}`;
  if (back.count && send.count)
    what += `, and those of the ${backText} that the service does not have`;
  else if (back.count) what = `Send those of the ${backText} that the service does not have`;
  return `${what}? They cannot be taken back.`;
}

/**
 * The lines of a run that sends nothing: nothingToSendLine, after an Approval: line only where
 * it informs (the team's rule would ask an approval of these payouts, were they to move).
 */
export function nothingToSendText(
  split: RunSplit,
  approval: string | undefined,
  c: ChalkInstance,
): string {
  const line = nothingToSendLine(split);
  return approval === undefined ? line : `${field('Approval:', approval, c)}\n${line}`;
}

/**
 * The one line of a run whose payouts were all sent earlier; a failed one is told as failed,
 * with what to do, never as "sent earlier".
 */
export function nothingToSendLine(split: RunSplit): string {
  const n = split.files.count;
  const by = displayText(earlierRunsText(split.earlierRuns));
  const failed = split.failedEarlier.count;
  if (!failed) {
    const all = n === 1 ? 'the one payout' : `all ${n} payouts`;
    const retried = split.retried.count ? ` (retried: ${retriedText(split)})` : '';
    return `Nothing to send: ${all} ${n === 1 ? 'was' : 'were'} sent earlier, by ${by}${retried}. Their recorded results:`;
  }
  const retried = split.retried.count ? `; retried: ${retriedText(split)}` : '';
  const runs = split.earlierRuns.filter((r) => r.runId);
  const show = runs.length === 1 ? `payouts runs show ${runs[0]!.runId}` : 'payouts runs show RUN';
  const all = n === 1 ? 'the one payout' : `all ${n} payouts`;
  const which = failed === n ? (n === 1 ? 'it' : 'all of them') : `${failed} of them`;
  return `Nothing to send: ${by} sent ${all}; ${which} failed at the service, and a failed payout needs a new reference_id (\`${show} --failed-out FILE\` writes them to a file to fill in)${retried}. Their recorded results:`;
}

/** The exact body of a create request, one payout per line (whitespace only is added). */
export function formatRequestBody(req: CreateRequest): string {
  const body = serializeCreateRequest(req);
  return body
    .replace(/\[\{/, '[\n  {')
    .replace(/\},\{"amount"/g, '},\n  {"amount"')
    .replace(/\}\]/, '}\n]');
}

/** A part of the split as {payout_count, totals}, or null when not known. */
function partDoc(totals: CurrencyTotals | null, currencies: CurrencyTable) {
  return totals && { payout_count: totals.count, totals: totalsDoc(totals, currencies) };
}

/** The --dry-run --json document: the send document's keys, the split's filled in. */
export function dryRunDoc(view: SummaryView, currencies: CurrencyTable): unknown {
  const { plan, split, dest } = view;
  return {
    ...sendDocHead({ dryRun: true, sandbox: dest.sandbox }),
    batch_reference: plan.batchReference ?? null,
    payout_count: plan.payoutCount,
    totals: totalsDoc(plan.totals, currencies),
    request_count: plan.requestCount,
    sent_earlier: partDoc(split?.sentEarlier ?? null, currencies),
    original_elsewhere: split?.elsewhere ?? [],
    to_read_back: partDoc(split?.readBack ?? null, currencies),
    to_send: {
      ...partDoc(split?.toSend ?? plan.totals, currencies),
      request_count: split ? split.requestCount : plan.requestCount,
    },
    // Whether the approval rule would let the send go (docs/approvals.md).
    ...(view.notes?.status ? { approval_status: view.notes.status } : {}),
    ...(view.notes?.changes?.doc ?? {}),
    first_request: {
      ...plan.firstRequest,
      payouts: plan.firstRequest.payouts.map((p) => ({ ...p, amount: new RawNumber(p.amount) })),
    },
    results: [],
  };
}
