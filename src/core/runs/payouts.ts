/**
 * A run's payouts as `runs show` gives them: their table and --json. A failed or canceled
 * payout a retry took on keeps its own status, one word in the state column; its retry has a
 * column of its own (`retried_as`), and by the one rule (src/domain/chain.ts, byRetry) it
 * counts as paid when that retry was (`paid_by_retry`), as the history records it.
 */
import type { ChalkInstance } from 'chalk';
import { byRetry, type HeldRef } from '../../domain/chain.js';
import { formatServiceAmount, moneyText } from '../../money/amount.js';
import { isoMinorUnits } from '../../money/currencies.js';
import { displayText } from '../../output/display.js';
import type { Output } from '../../output/output.js';
import { shortTime } from '../../output/table.js';
import { heldKind } from '../../domain/statuses.js';
import type { RunDetail } from '../../state/index.js';
import { serviceStatusJson } from '../documents.js';
import { colourStatus } from '../send/render.js';

/** A payout of a run, with its state and its last retry. */
type RunPayout = RunDetail['payouts'][number];

/** The public names of a payout's state in a run: the journal's own stay inside. */
const STATE_NAMES = {
  confirmed: 'result',
  'in-flight': 'in_flight',
  'sent-earlier': 'sent_earlier',
  free: 'not_sent',
} as const;

/** Whether a payout of a run is paid by its retry, as the history records the retry. */
export function paidByRetry(p: RunPayout): boolean {
  return p.state.state === 'confirmed' && byRetry(p.state.status, p.retried) === 'paid_by_retry';
}

/** A payout of a run in --json: charges in the currency's decimals, as `send --json` writes them. */
export function payoutJson(p: RunPayout) {
  const s = p.state;
  const stated = s.state === 'confirmed' ? s : undefined;
  return {
    reference_id: p.reference_id,
    amount: p.amount,
    currency: p.currency,
    state: STATE_NAMES[s.state],
    ...(stated ? serviceStatusJson(stated.status) : { status: null, service_status: null }),
    transaction_id: stated?.transaction_id ?? null,
    charges:
      stated?.charges === undefined
        ? null
        : formatServiceAmount(Number(stated.charges), isoMinorUnits(p.currency)),
    message: stated?.message ?? null,
    sent_at: s.state === 'in-flight' ? s.at : null,
    retried: p.retried ? retriedJson(p.retried) : null,
    paid_by_retry: paidByRetry(p),
    recorded_by: stated?.recorded_by ?? null,
    checked: p.checked
      ? { at: p.checked.at, by: p.checked.by, role: p.checked.role, not_held: p.checked.notHeld }
      : null,
  };
}

/** A payout's last retry, for --json. */
export function retriedJson(r: HeldRef): { reference_id: string; run_id: string; status: string } {
  return {
    reference_id: r.ref,
    run_id: r.runId,
    status: r.kind === 'doubt' ? 'unknown' : (r.status ?? 'unknown'),
  };
}

/**
 * The state of one payout of a run, for its table: one word (and, for a result recorded by
 * another role than the run's sender, `sender`, that role).
 */
function stateCells(p: RunPayout, c: ChalkInstance, sender: string | null): string[] {
  const s = p.state;
  if (s.state === 'confirmed') {
    const by =
      s.recorded_by !== undefined && s.recorded_by !== sender
        ? ` (recorded by role ${displayText(s.recorded_by)})`
        : '';
    const word = wordText(p);
    return [
      colourStatus(s.status, c) + by,
      displayText(s.transaction_id ?? ''),
      displayText([s.message, word].filter(Boolean).join('; ')),
    ];
  }
  if (s.state === 'in-flight') return [c.yellow('in flight'), '', ''];
  if (s.state === 'sent-earlier') return [c.dim('sent earlier'), '', ''];
  return ['not sent', '', ''];
}

/**
 * The service's latest word on a payout where it matters: one recorded as paid that it does
 * not hold, or one not final yet, with when it was last asked and how to ask again.
 */
function wordText(p: RunPayout): string {
  const k = p.checked;
  if (k?.notHeld) {
    return `not held by the service when checked on ${shortTime(k.at)} UTC (${k.by}): \`payouts reconcile\``;
  }
  if (p.state.state !== 'confirmed') return '';
  if (heldKind({ state: 'done', status: p.state.status }) !== 'pending') return '';
  const when = k ? `last checked ${shortTime(k.at)} UTC` : 'not checked since it was sent';
  return `${when}: \`payouts reconcile\``;
}

/**
 * A payout's retried_as cell: on a pipe the retry's reference alone; on a terminal what the
 * history holds of it, and whether it paid the payout.
 */
function retriedCell(p: RunPayout, c: ChalkInstance, terminal: boolean): string {
  const r = p.retried;
  if (!r) return '';
  const ref = displayText(r.ref);
  if (!terminal) return ref;
  const status = colourStatus(r.kind === 'doubt' ? 'unknown' : (r.status ?? 'unknown'), c);
  return `${ref} in run ${r.runId}: ${status}${paidByRetry(p) ? ', paid by it' : ''}`;
}

/** The table of a run's payouts. */
export async function payoutsTable(
  payouts: RunPayout[],
  output: Output,
  sender: string | null,
): Promise<string> {
  const c = output.color;
  const terminal = output.stdoutIsTerminal;
  const rows = payouts.map((p) => [
    displayText(p.reference_id),
    // Grouped for people; the rows on a pipe are for a program, their digits plain.
    moneyText(displayText(p.currency), p.amount, terminal),
    ...stateCells(p, c, sender),
    retriedCell(p, c, terminal),
  ]);
  const head = ['reference_id', 'amount', 'state', 'transaction_id', 'message', 'retried_as'];
  return output.table(head, rows, {
    wrap: ['state', 'message', 'retried_as'],
    below: ['message'],
  });
}
