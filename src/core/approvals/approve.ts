/** `payouts approve RUN`: another person approves (or rejects) a prepared run. */
import { ApprovalStateError, UsageError } from '../../errors.js';
import type { Output } from '../../output/output.js';
import {
  findPrepared,
  type PreparedRun,
  recordEvent,
  sessionRole,
} from '../../state/pg/approvals.js';
import { preparedFigures, withFigures } from '../../state/pg/prepared-figures.js';
import type { PgHistory } from '../../state/pg/history.js';
import { approversOf, eventLines, prepState, thisMachine, whoText, withShared } from './common.js';
import { keptScreen, reviewsOf } from './review.js';
import { sendCommandOf } from './gate.js';
import { type PreparedScreen, preparedScreen } from './screen.js';
import { attentionOf, type PreparedDoc, preparedDoc } from './screen-doc.js';
import { screenLines, screenTable, totalsText, whenText } from './screen-view.js';

/** What `approve` was asked to do. */
export interface ApproveRequest {
  url: string;
  prepId: string;
  yes: boolean;
  /** --all: every payout in the table, not the first 50. */
  all?: boolean;
  /** --reject --reason TEXT. */
  reject?: { reason: string };
  /** The approver's base URL, if configured: the screen spells the service as their send does. */
  baseUrl?: string;
}

/** The error of a run that is expired: its own exit code, with when. */
export function expiredError(p: PreparedRun, tail: string): ApprovalStateError {
  return new ApprovalStateError(
    `run ${p.prep_id} expired at ${whenText(p.expires_at)}: prepare the files again with \`payouts send FILES --prepare\`; ${tail}`,
    { state: 'expired', prepared_run_id: p.prep_id, reason: null, expires_at: p.expires_at },
  );
}

/** Why a prepared run cannot be decided on by `role` now; undefined when it can. */
function refusal(p: PreparedRun, role: string): Error | undefined {
  const state = prepState(p);
  if (p.prepared_by === role) {
    return new UsageError(
      `you (role ${role}) prepared run ${p.prep_id}: another person, connected with a role of their own, approves or rejects it; nothing was recorded`,
    );
  }
  const decided = p.events.find((e) => e.decision === 'rejected') ?? p.events[0];
  if (state !== 'prepared' && state !== 'expired' && decided) {
    const why = decided.reason ? `: ${JSON.stringify(decided.reason)}` : '';
    const message = `run ${p.prep_id} was already ${decided.decision} by ${whoText(decided.by_role, decided)} at ${whenText(decided.at)}${why}${state === 'sent' ? ', and sent' : ''}; nothing was recorded`;
    if (decided.decision !== 'rejected') return new UsageError(message);
    return new ApprovalStateError(message, {
      state: 'rejected',
      prepared_run_id: p.prep_id,
      reason: decided.reason,
      expires_at: p.expires_at,
    });
  }
  const mine = p.events.find((e) => e.by_role === role && e.decision !== 'sent');
  if (mine) {
    return new UsageError(
      `you (role ${role}) already ${mine.decision} run ${p.prep_id} at ${whenText(mine.at)}: another person, connected with a role of their own, decides next; nothing was recorded`,
    );
  }
  if (state === 'expired') return expiredError(p, 'nothing was recorded');
  return undefined;
}

/**
 * Shows the approver's screen: its lines, then the payouts' table. `aside`: all of it on
 * stderr when stdout is not a terminal (approve's stdout holds only what was recorded).
 */
export async function showScreen(
  s: PreparedScreen,
  output: Output,
  opts: { all: boolean; aside: boolean },
): Promise<void> {
  const grouped = output.stdoutIsTerminal;
  const toErr = opts.aside && !output.stdoutIsTerminal;
  // Lines are for people, grouped everywhere; the table on a pipe is for a program.
  for (const line of screenLines(s, opts.all)) {
    if (toErr) output.info(line);
    else output.printAside(line);
  }
  await screenTable(s, output, { all: opts.all, grouped, toErr }, [['attention', attentionOf(s)]]);
}

/** Finds the run, refuses what the rules do not allow, shows it, asks, and records the decision. */
async function decide(
  h: PgHistory,
  req: ApproveRequest,
  output: Output,
): Promise<{ doc: PreparedDoc; run: PreparedRun }> {
  const found = await findPrepared(h, req.prepId);
  if (!found)
    throw new UsageError(
      `no prepared run id starts with ${JSON.stringify(req.prepId)}: see payouts runs`,
    );
  // What is shown is computed from the run's payouts; a row that says otherwise is refused.
  const figures = await preparedFigures(h, found);
  if (figures.claims.length && !req.reject) {
    throw new UsageError(
      `run ${found.prep_id} says ${figures.claims.join('; ')}: it was not recorded by payouts; reject it (--reject --reason TEXT); nothing was recorded`,
    );
  }
  const p = withFigures(found, figures);
  const why = refusal(p, await sessionRole(h));
  if (why) throw why;
  const all = Boolean(req.all);
  const screen = await preparedScreen(h, p, req.baseUrl);
  if (!output.json) await showScreen(screen, output, { all, aside: true });
  const verb = req.reject ? 'Reject' : 'Approve';
  if (!req.yes) {
    if (!output.interactive) {
      throw new UsageError(
        `no terminal to confirm on: pass --yes to ${verb.toLowerCase()} without asking (nothing was recorded)`,
      );
    }
    const totals = totalsText(preparedDoc(screen).totals, true);
    const question = `${verb} run ${p.prep_id}: ${totals}?`;
    if (!(await output.confirm(question)))
      throw new UsageError('not confirmed: nothing was recorded');
  }
  // The screen the decision was made on is kept with it (review.ts).
  const review = keptScreen(screen, all);
  await recordEvent(
    h,
    p,
    req.reject
      ? { decision: 'rejected', reason: req.reject.reason, review }
      : { decision: 'approved', review },
    thisMachine(),
  );
  const now = withFigures((await findPrepared(h, p.prep_id))!, figures);
  const after = await preparedScreen(h, now, req.baseUrl);
  return { doc: preparedDoc(after, await reviewsOf(h, p.id)), run: now };
}

/** `payouts approve`: exit 0 once recorded; refusals record nothing (exit 2, 10 or 11). */
export async function approveRun(req: ApproveRequest, output: Output): Promise<number> {
  const { doc, run: p } = await withShared(req.url, (h) => decide(h, req, output));
  output.result(doc, () =>
    [
      doc.state === 'prepared'
        ? `Approved run ${p.prep_id}: ${approversOf(p).length} of ${p.approvers_needed} approvals; another person approves it with \`payouts approve ${p.prep_id}\`.`
        : doc.state === 'approved'
          ? `Approved run ${p.prep_id}. \`${sendCommandOf(p.inputs, p.send_args)}\` (the same payouts) or \`payouts send --approved ${p.prep_id}\` sends it.`
          : `Rejected run ${p.prep_id}: nothing of it will be sent.`,
      ...eventLines(p),
    ].join('\n'),
  );
  return 0;
}
