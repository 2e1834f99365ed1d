/**
 * Approvals as `payouts send` meets them: --prepare records a run, a send under the rule
 * needs an approved run of exactly its payouts, and --approved sends one from the history.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PayoutRequest } from '../../api/types.js';
import { type ApprovalBlock, ApprovalStateError, UsageError } from '../../errors.js';
import { formatMinor } from '../../money/amount.js';
import { shortTime } from '../../output/table.js';
import type { CurrencyTotals } from '../../money/amount.js';
import type { CurrencyTable } from '../../money/currencies.js';
import { displayText, shellWord } from '../../output/display.js';
import {
  approvedSharing,
  findPrepared,
  insertPrepared,
  type NewPrepared,
  type PreparedPayout,
  type PreparedRun,
  preparedByContent,
  type RuleRow,
  preparedPayouts,
  recordEvent,
  ruleChanges,
} from '../../state/pg/approvals.js';
import type { PgHistory } from '../../state/pg/history.js';
import {
  approvalHash,
  contentHash,
  newPrepId,
  prepState,
  ruleApplies,
  thisMachine,
  whoText,
  withShared,
} from './common.js';

/** A send's payouts, as the approval check compares them. */
export interface GatedRun {
  url: string;
  serviceKey: string;
  payouts: Array<{ row: number; payout: PayoutRequest }>;
  totals: CurrencyTotals;
  currencies: CurrencyTable;
  /** The command that prepares these files, for the message. */
  prepareCommand: string;
  /** A dry run's rows keep no descriptions: matched without them (dry-gate.ts). */
  withoutDescriptions?: boolean;
}

/** The payouts with their approval hashes, and the content hash of them all. */
function hashed(payouts: GatedRun['payouts']): { rows: PreparedPayout[]; content: string } {
  const rows = payouts.map(({ row, payout }) => ({
    row,
    reference_id: payout.reference_id,
    amount: payout.amount,
    currency: payout.currency,
    recipient: payout.recipient,
    description: payout.description ?? null,
    hash: approvalHash(payout),
  }));
  return { rows, content: contentHash(rows) };
}

/** A payout in a few words for a message. */
function payoutWords(p: { amount: string; currency: string; recipient: string }): string {
  return `${p.amount} ${p.currency} to ${displayText(p.recipient)}`;
}

/** The rows of a file that differ from an approved run, at most 10 named. */
function differences(mine: PreparedPayout[], approved: PreparedPayout[]): string[] {
  const theirs = new Map(approved.map((p) => [p.reference_id, p]));
  const out: string[] = [];
  for (const p of mine) {
    const a = theirs.get(p.reference_id);
    theirs.delete(p.reference_id);
    if (!a) out.push(`${displayText(p.reference_id)} is not in it`);
    else if (a.hash !== p.hash)
      out.push(
        `${displayText(p.reference_id)}: ${payoutWords(p)} here, ${payoutWords(a)} approved`,
      );
  }
  for (const a of theirs.values())
    out.push(`${displayText(a.reference_id)} was approved but is not here`);
  return out.length > 10 ? [...out.slice(0, 10), `and ${out.length - 10} more`] : out;
}

/** The error that stops a send for want of approval: exit 9, 10 or 11 with the run named. */
function blocked(
  message: string,
  state: ApprovalBlock,
  p?: PreparedRun,
  reason: string | null = null,
): ApprovalStateError {
  return new ApprovalStateError(message, {
    state,
    prepared_run_id: p?.prep_id ?? null,
    reason,
    expires_at: p?.expires_at ?? null,
  });
}

/** Why these payouts may not be sent: no approved run holds exactly them. */
async function refusal(
  h: PgHistory,
  run: GatedRun,
  mine: PreparedPayout[],
  same: PreparedRun[],
): Promise<ApprovalStateError> {
  const tail = `nothing was sent. Prepare them with \`${run.prepareCommand}\` and have another person run \`payouts approve RUN\``;
  const pending = same.find((p) => prepState(p) === 'prepared');
  if (pending) {
    return blocked(
      `these payouts need another person's approval: run ${pending.prep_id}, prepared by ${whoText(pending.prepared_by, pending)}, is not approved yet (it expires at ${shortTime(pending.expires_at)} UTC). Ask someone else to run \`payouts approve ${pending.prep_id}\`; nothing was sent`,
      'awaiting_approval',
      pending,
    );
  }
  const rejected = same.find((p) => prepState(p) === 'rejected');
  if (rejected) {
    const e = rejected.events[0]!;
    return blocked(
      `run ${rejected.prep_id} with these payouts was rejected by ${whoText(e.by_role, e)} at ${shortTime(e.at)} UTC${e.reason ? `: ${JSON.stringify(e.reason)}` : ''}; ${tail}`,
      'rejected',
      rejected,
      e.reason,
    );
  }
  const expired = same.find((p) => prepState(p) === 'expired');
  if (expired) {
    return blocked(
      `run ${expired.prep_id} with these payouts expired at ${shortTime(expired.expires_at)} UTC before anyone approved it; ${tail}`,
      'expired',
      expired,
    );
  }
  const near = (
    await approvedSharing(
      h,
      run.serviceKey,
      mine.map((p) => p.reference_id),
    )
  )[0];
  if (near) {
    const diff = differences(mine, await preparedPayouts(h, near.id));
    return blocked(
      `these payouts differ from approved run ${near.prep_id} (approved for ${near.inputs.map(displayText).join(' ')}): ${diff.join('; ')}; ${tail}`,
      'awaiting_approval',
    );
  }
  return blocked(
    `the approval rule of this service asks another person's approval of this run, and no approved run holds these payouts; ${tail}`,
    'awaiting_approval',
  );
}

/** What the approval rule says of a send: approved, needed (the refusal), or not needed. */
export type ApprovalStatus =
  | { kind: 'approved'; prep: PreparedRun }
  | { kind: 'needed'; refusal: ApprovalStateError }
  | { kind: 'not needed'; why: string };

/** Why a rule with thresholds does not apply: "EUR 6.00 is below the rule's threshold EUR 10.00". */
function belowText(rule: RuleRow, run: GatedRun): string {
  const parts = rule.above.map((a) => {
    const total = formatMinor(
      run.totals.minorOf(a.currency),
      run.currencies.minorUnits(a.currency) ?? 2,
    );
    return `${a.currency} ${total} is not above the rule's threshold ${a.currency} ${a.amount}`;
  });
  return parts.join(', ');
}

/** Where the rule applies to a send, the approved run holding exactly its payouts, or why not. */
export async function approvalStatus(run: GatedRun): Promise<ApprovalStatus> {
  return withShared(run.url, async (h) => {
    const rule = (await ruleChanges(h, run.serviceKey)).at(-1);
    if (!rule?.active) return { kind: 'not needed', why: 'this service has no approval rule' };
    if (!ruleApplies(rule, run.totals, run.currencies))
      return { kind: 'not needed', why: belowText(rule, run) };
    const payouts = run.payouts;
    const { rows, content } = hashed(payouts);
    const loose = run.withoutDescriptions
      ? await (await import('./dry-gate.js')).looseMatch(h, run.serviceKey, payouts)
      : undefined;
    const same = run.withoutDescriptions
      ? loose
        ? [loose]
        : []
      : await preparedByContent(h, run.serviceKey, content);
    const approved = same.find((p) => ['approved', 'sent'].includes(prepState(p)));
    if (approved) return { kind: 'approved', prep: approved };
    return { kind: 'needed', refusal: await refusal(h, run, rows, same) };
  });
}

/** Records that run `runId` sent (or began sending) an approved prepared run, once. */
export async function markSent(url: string, prep: PreparedRun, runId: string): Promise<void> {
  if (prep.events.some((e) => e.decision === 'sent')) return;
  await withShared(url, (h) =>
    recordEvent(h, prep, { decision: 'sent', run_id: runId }, thisMachine()),
  );
}

/** `send --prepare`: records the run as prepared; nothing is sent. */
export async function recordPrepared(
  run: GatedRun,
  prep: Omit<NewPrepared, 'prep_id' | 'content_hash' | 'serviceKey'>,
): Promise<PreparedRun> {
  const { rows, content } = hashed(run.payouts);
  return withShared(run.url, (h) =>
    insertPrepared(
      h,
      { ...prep, prep_id: newPrepId(), content_hash: content, serviceKey: run.serviceKey },
      rows,
      thisMachine(),
    ),
  );
}

/** A CSV cell, quoted when it must be (RFC 4180). */
function cell(text: string | null): string {
  if (text === null) return '';
  return /[",\r\n]/.test(text) || text !== text.trim() ? `"${text.replace(/"/g, '""')}"` : text;
}

/**
 * `send --approved RUN`: the approved run's payouts from the history, written to a CSV file
 * in `dir` for the send to read as it reads any file; the run with its batch and webhook.
 */
export async function approvedFile(
  url: string,
  prepId: string,
  dir: string,
  pid: number,
): Promise<{ path: string; prep: PreparedRun }> {
  return withShared(url, async (h) => {
    const prep = await findPrepared(h, prepId);
    if (!prep)
      throw new UsageError(
        `no prepared run id starts with ${JSON.stringify(prepId)}: see payouts runs`,
      );
    const state = prepState(prep);
    if (state !== 'approved' && state !== 'sent') throw notApproved(prep);
    const rows = (await preparedPayouts(h, prep.id)).map((p) =>
      [p.reference_id, p.amount, p.currency, p.recipient, p.description].map(cell).join(','),
    );
    const path = join(dir, `approved-${prep.prep_id}-${pid}.csv`);
    writeFileSync(
      path,
      `reference_id,amount,currency,recipient,description\n${rows.join('\n')}\n`,
      { mode: 0o600 },
    );
    return { path, prep };
  });
}

/** Why `send --approved` of a run not approved sends nothing: awaiting, rejected or expired. */
function notApproved(prep: PreparedRun): ApprovalStateError {
  const state = prepState(prep);
  const e = prep.events.find((x) => x.decision === 'rejected');
  if (state === 'rejected' && e) {
    return blocked(
      `run ${prep.prep_id} was rejected by ${whoText(e.by_role, e)} at ${shortTime(e.at)} UTC${e.reason ? `: ${JSON.stringify(e.reason)}` : ''}: prepare the files again; nothing was sent`,
      'rejected',
      prep,
      e.reason,
    );
  }
  if (state === 'expired') {
    return blocked(
      `run ${prep.prep_id} expired at ${shortTime(prep.expires_at)} UTC before anyone approved it: prepare the files again; nothing was sent`,
      'expired',
      prep,
    );
  }
  return blocked(
    `run ${prep.prep_id} is not approved yet: another person approves it with \`payouts approve ${prep.prep_id}\` (until ${shortTime(prep.expires_at)} UTC); nothing was sent`,
    'awaiting_approval',
    prep,
  );
}

/** The command that prepares these files, for messages. */
export function prepareCommandOf(files: string[]): string {
  return `payouts send ${files.map(shellWord).join(' ')} --prepare`;
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
