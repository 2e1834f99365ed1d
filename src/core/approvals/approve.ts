/** `payouts approve RUN`: another person approves (or rejects) a prepared run. */
import { ApprovalStateError, UsageError } from '../../errors.js';
import type { Output } from '../../output/output.js';
import {
  findPrepared,
  type PreparedRun,
  recordEvent,
  sessionRole,
} from '../../state/pg/approvals.js';
import type { PgHistory } from '../../state/pg/history.js';
import { eventLines, prepState, thisMachine, whoText, withShared } from './common.js';
import { type PreparedScreen, preparedScreen } from './screen.js';
import { preparedDoc, screenLines, screenTable, totalsText, whenText } from './screen-view.js';

/** What `approve` was asked to do. */
export interface ApproveRequest {
  url: string;
  prepId: string;
  yes: boolean;
  /** --all: every payout in the table, not the first 50. */
  all?: boolean;
  /** --reject --reason TEXT. */
  reject?: { reason: string };
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
  const decided = p.events[0];
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
  for (const line of screenLines(s, grouped)) {
    if (toErr) output.info(line);
    else output.printAside(line);
  }
  await screenTable(s, output, { all: opts.all, grouped, toErr });
}

/** Finds the run, refuses what the rules do not allow, shows it, asks, and records the decision. */
async function decide(h: PgHistory, req: ApproveRequest, output: Output): Promise<PreparedScreen> {
  const p = await findPrepared(h, req.prepId);
  if (!p)
    throw new UsageError(
      `no prepared run id starts with ${JSON.stringify(req.prepId)}: see payouts runs`,
    );
  const why = refusal(p, await sessionRole(h));
  if (why) throw why;
  const screen = await preparedScreen(h, p);
  if (!output.json) await showScreen(screen, output, { all: Boolean(req.all), aside: true });
  const verb = req.reject ? 'Reject' : 'Approve';
  if (!req.yes) {
    if (!output.interactive) {
      throw new UsageError(
        `no terminal to confirm on: pass --yes to ${verb.toLowerCase()} without asking (nothing was recorded)`,
      );
    }
    const totals = totalsText(preparedDoc(screen).totals, output.stderrIsTerminal);
    const question = `${verb} run ${p.prep_id}: ${totals}?`;
    if (!(await output.confirm(question)))
      throw new UsageError('not confirmed: nothing was recorded');
  }
  await recordEvent(
    h,
    p,
    req.reject ? { decision: 'rejected', reason: req.reject.reason } : { decision: 'approved' },
    thisMachine(),
  );
  return preparedScreen(h, (await findPrepared(h, p.prep_id))!);
}

/** `payouts approve`: exit 0 once recorded; refusals record nothing (exit 2, 10 or 11). */
export async function approveRun(req: ApproveRequest, output: Output): Promise<number> {
  const s = await withShared(req.url, (h) => decide(h, req, output));
  const p = s.run;
  output.result(preparedDoc(s), () =>
    [
      s.state === 'approved'
        ? `Approved run ${p.prep_id}. \`payouts send ${p.inputs.join(' ')}\` (the same payouts) or \`payouts send --approved ${p.prep_id}\` sends it.`
        : `Rejected run ${p.prep_id}: nothing of it will be sent.`,
      ...eventLines(p),
    ].join('\n'),
  );
  return 0;
}
