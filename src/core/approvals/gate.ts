import { serviceIdentity } from '../../api/base-url.js';
import type { PayoutRequest } from '../../api/types.js';
import { type ApprovalBlock, ApprovalStateError, UsageError } from '../../errors.js';
import { type CurrencyTotals, formatMinor, moneyText } from '../../money/amount.js';
import { shortTime } from '../../output/table.js';
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
  recordEvent,
  runRecorded,
} from '../../state/pg/approvals.js';
import { type RuleRow, ruleChanges } from '../../state/pg/approval-rules.js';
import { preparedFigures, withFigures } from '../../state/pg/prepared-figures.js';
import type { PgHistory } from '../../state/pg/history.js';
import { redactWord } from '../../state/pg/url.js';
import {
  approvalHash,
  approversOf,
  type Bound,
  contentHash,
  newPrepId,
  prepState,
  ruleApplies,
  type SharedAt,
  thresholdMoney,
  thisMachine,
  whoText,
  withShared,
} from './common.js';

/** A send's payouts, as the approval check compares them. */
export interface GatedRun {
  /** The shared history: the send's session there. */
  at: SharedAt;
  serviceKey: string;
  /** Each with the reference it retries, for a retry file's row. */
  payouts: Array<{ row: number; payout: PayoutRequest; retry_of?: string }>;
  totals: CurrencyTotals;
  currencies: CurrencyTable;
  /** The command that prepares these files, for the message. */
  prepareCommand: string;
  /** What the payouts are sent with: bound by the approval as they are. */
  batchReference?: string;
  webhookUrl?: string;
  /** The prepared run `send --approved` sends. */
  approvedPrep?: string;
  /** A dry run's rows keep no descriptions: matched without them (dry-gate.ts). */
  withoutDescriptions?: boolean;
}

/** The payouts with their approval hashes, and the content hash of them and what they go with. */
function hashed(run: GatedRun): { rows: PreparedPayout[]; content: string; bound: Bound } {
  const bound = {
    service: serviceIdentity(run.serviceKey),
    batch_reference: run.batchReference ?? null,
    // Every role of the history reads this: its password, if any, is not kept (issue 48).
    webhook_url: run.webhookUrl === undefined ? null : redactWord(run.webhookUrl),
  };
  const rows = run.payouts.map(({ row, payout, retry_of = null }) => ({
    row,
    reference_id: payout.reference_id,
    amount: payout.amount,
    currency: payout.currency,
    recipient: payout.recipient,
    description: payout.description ?? null,
    retry_of,
    hash: approvalHash({ ...payout, retry_of }),
  }));
  return { rows, content: contentHash(rows, bound), bound };
}

/** What a send goes with that an approved run does not: service, batch, webhook. */
export function boundDifferences(mine: Bound, approved: Bound): string[] {
  const out: string[] = [];
  const say = (v: string | null) => (v === null ? '(none)' : displayText(v));
  for (const [what, key] of [
    ['service', 'service'],
    ['batch reference', 'batch_reference'],
    ['webhook URL', 'webhook_url'],
  ] as const) {
    if (mine[key] !== approved[key])
      out.push(`the ${what} is ${say(mine[key])} here, ${say(approved[key])} approved`);
  }
  return out;
}

/** A payout in a few words for a message (and what it retries: the approval binds that too). */
function payoutWords(p: {
  amount: string;
  currency: string;
  recipient: string;
  retry_of: string | null;
}): string {
  const retry = p.retry_of ? `, retrying ${displayText(p.retry_of)}` : '';
  return `${moneyText(p.currency, p.amount)} to ${displayText(p.recipient)}${retry}`;
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

/**
 * Why these payouts may not be sent: no approved run holds exactly them (exit 9, 10 or 11),
 * or the approved run goes with another service, batch or webhook (a UsageError, exit 2).
 */
async function refusal(
  h: PgHistory,
  run: GatedRun,
  mine: ReturnType<typeof hashed>,
  same: PreparedRun[],
): Promise<ApprovalStateError | UsageError> {
  const tail = `nothing was sent. Prepare them with \`${run.prepareCommand}\` and have another person run \`payouts approve RUN\``;
  const early = stateRefusal(same, tail);
  if (early) return early;
  const named = run.approvedPrep ? await findPrepared(h, run.approvedPrep) : undefined;
  const near =
    named ??
    (
      await approvedSharing(
        h,
        run.serviceKey,
        mine.rows.map((p) => p.reference_id),
      )
    )[0];
  if (near) {
    const f = await preparedFigures(h, near);
    const bound = boundDifferences(mine.bound, f);
    const diff = [...bound, ...differences(mine.rows, f.payouts)];
    const text = `these payouts differ from approved run ${near.prep_id} (approved for ${near.inputs.map(displayText).join(' ')}): ${diff.join('; ')}; ${tail}`;
    return bound.length ? new UsageError(text) : blocked(text, 'awaiting_approval');
  }
  return blocked(
    `the approval rule of this service asks another person's approval of this run, and no approved run holds these payouts; ${tail}`,
    'awaiting_approval',
  );
}

/** A prepared run of these very payouts that expired, awaits approval or was rejected. */
function stateRefusal(same: PreparedRun[], tail: string): ApprovalStateError | undefined {
  const lapsed = same.find((p) => p.expired && approversOf(p).length >= p.approvers_needed);
  if (lapsed) {
    return blocked(
      `the approval of run ${lapsed.prep_id} expired at ${shortTime(lapsed.expires_at)} UTC before it was sent; ${tail}`,
      'expired',
      lapsed,
    );
  }
  const pending = same.find((p) => prepState(p) === 'prepared');
  if (pending) {
    return blocked(
      `these payouts need another person's approval: run ${pending.prep_id}, prepared by ${whoText(pending.prepared_by, pending)}, is not approved yet (${approversOf(pending).length} of ${pending.approvers_needed} approvals; it expires at ${shortTime(pending.expires_at)} UTC). Ask someone else to run \`payouts approve ${pending.prep_id}\`; nothing was sent`,
      'awaiting_approval',
      pending,
    );
  }
  const rejected = same.find((p) => prepState(p) === 'rejected');
  if (rejected) {
    const e = rejected.events.find((x) => x.decision === 'rejected')!;
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
  return undefined;
}

/**
 * The prepared runs of a service whose payouts, computed from their rows, are exactly these
 * (a run whose row claims a content hash its payouts do not make is left out), each with the
 * approvals the rule asks now if more than it asked when read.
 */
async function sameContent(
  h: PgHistory,
  run: GatedRun,
  content: string,
  approvers: number,
): Promise<PreparedRun[]> {
  const out: PreparedRun[] = [];
  for (const p of await preparedByContent(h, run.serviceKey, content)) {
    const f = await preparedFigures(h, p);
    if (f.content_hash !== content || f.claims.length) continue;
    out.push({ ...withFigures(p, f), approvers_needed: Math.max(p.approvers_needed, approvers) });
  }
  return out;
}

/** What the approval rule says of a send: approved, needed (the refusal), or not needed. */
export type ApprovalStatus =
  | { kind: 'approved'; prep: PreparedRun }
  | { kind: 'needed'; refusal: ApprovalStateError | UsageError }
  | { kind: 'not needed'; why: string };

/** Why a rule with thresholds does not apply: "EUR 6.00 is not above the rule's EUR 10.00". */
function belowText(rule: RuleRow, run: GatedRun): string {
  const parts = [...run.totals.entries()].map((t) => {
    const a = rule.above.find((x) => x.currency === t.currency);
    if (a?.amount === 'none') return `the rule never gates ${t.currency}`;
    const total = formatMinor(t.minor, run.currencies.minorUnits(t.currency) ?? 2);
    const threshold = thresholdMoney(a ?? { currency: t.currency, amount: '0' });
    return `${moneyText(t.currency, total)} is not above the rule's threshold ${threshold}`;
  });
  return parts.join(', ');
}

/**
 * Where the rule applies to a send, the approved run that holds exactly its payouts, with
 * the same service, batch reference and webhook URL; else the refusal naming what is missing
 * or differs, or that the approval expired. A dry run's rows keep no descriptions: the
 * prepared run holding the same payouts but for them stands for it (the send checks the hash).
 */
export async function approvalStatus(run: GatedRun): Promise<ApprovalStatus> {
  return withShared(run.at, async (h) => {
    const rule = (await ruleChanges(h, run.serviceKey)).at(-1);
    if (!rule?.active) return { kind: 'not needed', why: 'this service has no approval rule' };
    if (!ruleApplies(rule, run.totals, run.currencies))
      return { kind: 'not needed', why: belowText(rule, run) };
    const mine = hashed(run);
    let same: PreparedRun[];
    if (run.withoutDescriptions) {
      const loose = await (await import('./dry-gate.js')).looseMatch(
        h,
        run.serviceKey,
        run.payouts,
      );
      same = loose ? [loose] : [];
    } else same = await sameContent(h, run, mine.content, rule.approvers);
    const approved = same.find((p) => ['approved', 'sent'].includes(prepState(p)));
    if (approved) return { kind: 'approved', prep: approved };
    return { kind: 'needed', refusal: await refusal(h, run, mine, same) };
  });
}

/**
 * Before anything is sent, under the service's lock: records that run `runId` sends the
 * approved run, which the database allows once, before the approval expires and once the
 * rule's approvers approved it. The run that recorded it may resume; another run goes on
 * only when it sends nothing (all was sent earlier). A UsageError (nothing sent) otherwise.
 */
export async function claimApproval(
  at: SharedAt,
  prep: PreparedRun,
  run: { runId: string; sendsNothing: boolean },
): Promise<void> {
  await withShared(at, async (h) => {
    const now = (await findPrepared(h, prep.prep_id)) ?? prep;
    const sent = now.events.find((e) => e.decision === 'sent');
    if (run.sendsNothing) return;
    // The run that used the approval resumes it, while the history still holds that run.
    if (sent?.run_id === run.runId && (await runRecorded(h, run.runId))) return;
    if (sent) {
      throw new UsageError(
        `the approval of run ${prep.prep_id} was used by run ${sent.run_id ?? '?'} (${whoText(sent.by_role, sent)} at ${sent.at}): an approval sends once. Prepare what is left with \`payouts send FILES --prepare\`; nothing was sent`,
      );
    }
    try {
      await recordEvent(h, now, { decision: 'sent', run_id: run.runId }, thisMachine());
    } catch (err) {
      // Expired or rejected while this send waited for the lock: exit 11 or 10, as before it.
      const later = await findPrepared(h, prep.prep_id).catch(() => undefined);
      if (later && ['expired', 'rejected'].includes(prepState(later))) throw notApproved(later);
      if (err instanceof UsageError)
        throw new UsageError(err.message.replace(/nothing was recorded$/, 'nothing was sent'));
      throw err;
    }
  });
}

/** `send --prepare`: records the run as prepared; nothing is sent. */
export async function recordPrepared(
  run: GatedRun,
  prep: Omit<NewPrepared, 'prep_id' | 'content_hash' | 'serviceKey'>,
): Promise<PreparedRun> {
  const { rows, content, bound } = hashed(run);
  return withShared(run.at, (h) =>
    insertPrepared(
      h,
      {
        ...prep,
        service: bound.service,
        ...(bound.webhook_url === null ? {} : { webhook_url: bound.webhook_url }),
        prep_id: newPrepId(),
        content_hash: content,
        serviceKey: run.serviceKey,
      },
      rows,
      thisMachine(),
    ),
  );
}

/** Why `send --approved` of a run not approved sends nothing: awaiting, rejected or expired. */
export function notApproved(prep: PreparedRun): ApprovalStateError {
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
      `run ${prep.prep_id} expired at ${shortTime(prep.expires_at)} UTC before it was sent: prepare the files again; nothing was sent`,
      'expired',
      prep,
    );
  }
  return blocked(
    `run ${prep.prep_id} is not approved yet (${approversOf(prep).length} of ${prep.approvers_needed} approvals): another person approves it with \`payouts approve ${prep.prep_id}\` (until ${shortTime(prep.expires_at)} UTC); nothing was sent`,
    'awaiting_approval',
    prep,
  );
}

/**
 * The command that sends these files, with `args`, the options they were read and are sent
 * with (--encoding, --decimal-comma, --map …), for a message's next step.
 */
export function sendCommandOf(files: readonly string[], args: readonly string[] = []): string {
  return `payouts send ${[...files, ...args].map(shellWord).join(' ')}`;
}

/** The command that prepares these files, with the options they were read with, for messages. */
export function prepareCommandOf(files: readonly string[], args: readonly string[] = []): string {
  return `${sendCommandOf(files, args)} --prepare`;
}
