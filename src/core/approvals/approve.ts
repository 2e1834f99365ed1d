/** `payouts approve RUN`: another person approves (or rejects) a prepared run. */
import { UsageError } from '../../errors.js';
import type { Output } from '../../output/output.js';
import { displayText } from '../../output/display.js';
import {
  findPrepared,
  type PreparedRun,
  preparedFigures,
  recordEvent,
  sessionRole,
  withFigures,
} from '../../state/pg/approvals.js';
import type { PgHistory } from '../../state/pg/history.js';
import {
  approversOf,
  eventLines,
  prepState,
  thisMachine,
  totalsLine,
  whoText,
  withShared,
} from './common.js';

/** What `approve` was asked to do. */
export interface ApproveRequest {
  url: string;
  prepId: string;
  yes: boolean;
  /** --reject --reason TEXT. */
  reject?: { reason: string };
}

/** Why a prepared run cannot be decided on by `role` now; undefined when it can. */
function refusal(p: PreparedRun, role: string): string | undefined {
  const state = prepState(p);
  if (p.prepared_by === role) {
    return `you (role ${role}) prepared run ${p.prep_id}: another person, connected with a role of their own, approves or rejects it`;
  }
  const decided = p.events.find((e) => e.decision === 'rejected') ?? p.events[0];
  if (state !== 'prepared' && state !== 'expired' && decided) {
    return `run ${p.prep_id} was already ${decided.decision} by ${whoText(decided.by_role, decided)} at ${decided.at}${state === 'sent' ? ', and sent' : ''}`;
  }
  const mine = p.events.find((e) => e.by_role === role && e.decision !== 'sent');
  if (mine)
    return `you (role ${role}) already ${mine.decision} run ${p.prep_id} at ${mine.at}: another person, connected with a role of their own, decides next`;
  if (state === 'expired') {
    return `run ${p.prep_id} expired at ${p.expires_at}: prepare the files again with \`payouts send FILES --prepare\``;
  }
  return undefined;
}

/** The summary a person approves: what a send's summary says of the run, and who prepared it. */
export function preparedSummary(p: PreparedRun): string {
  const field = (label: string, value: string) => `${label.padEnd(16)}${value}`;
  return [
    field('Prepared run:', p.prep_id),
    field('Inputs:', p.inputs.map(displayText).join(' ')),
    field('Payouts:', String(p.payout_count)),
    field('Totals:', totalsLine(p)),
    field('Service:', displayText(p.service)),
    field(
      'Batch:',
      p.batch_reference === null
        ? '(none: the service assigns one)'
        : displayText(p.batch_reference),
    ),
    field('Webhook:', p.webhook_url === null ? '(none)' : displayText(p.webhook_url)),
    field('Prepared by:', `${whoText(p.prepared_by, p)} at ${p.created_at}`),
    field('Note:', p.note === null ? '(none)' : displayText(p.note)),
    field('Expires:', p.expires_at),
  ].join('\n');
}

/** Finds the run, refuses what the rules do not allow, shows it, asks, and records the decision. */
async function decide(h: PgHistory, req: ApproveRequest, output: Output): Promise<PreparedRun> {
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
  if (why) throw new UsageError(`${why}; nothing was recorded`);
  output.info(preparedSummary(p));
  const verb = req.reject ? 'Reject' : 'Approve';
  if (!req.yes) {
    if (!output.interactive) {
      throw new UsageError(
        `no terminal to confirm on: pass --yes to ${verb.toLowerCase()} without asking (nothing was recorded)`,
      );
    }
    const question = `${verb} run ${p.prep_id}: ${totalsLine(p)}?`;
    if (!(await output.confirm(question)))
      throw new UsageError('not confirmed: nothing was recorded');
  }
  await recordEvent(
    h,
    p,
    req.reject ? { decision: 'rejected', reason: req.reject.reason } : { decision: 'approved' },
    thisMachine(),
  );
  return withFigures((await findPrepared(h, p.prep_id))!, figures);
}

/** `payouts approve`: exit 0 once recorded; refusals are UsageErrors (exit 2), nothing recorded. */
export async function approveRun(req: ApproveRequest, output: Output): Promise<number> {
  const p = await withShared(req.url, (h) => decide(h, req, output));
  const state = prepState(p);
  output.result({ prepared_run: { ...p, state } }, () =>
    state === 'prepared'
      ? `Approved run ${p.prep_id}: ${approversOf(p).length} of ${p.approvers_needed} approvals; another person approves it with \`payouts approve ${p.prep_id}\`.\n${eventLines(p).join('\n')}`
      : state === 'approved'
        ? `Approved run ${p.prep_id}. \`payouts send ${p.inputs.join(' ')}\` (the same payouts) or \`payouts send --approved ${p.prep_id}\` sends it.\n${eventLines(p).join('\n')}`
        : `Rejected run ${p.prep_id}: nothing of it will be sent.\n${eventLines(p).join('\n')}`,
  );
  return 0;
}
