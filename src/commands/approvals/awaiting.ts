import type { CommandContext } from '../../context.js';
import { displayText } from '../../output/display.js';

/**
 * Prints what awaits the reader's approval (`approvals list`, and `approve` without a run):
 * a table with how to approve, or one line saying nothing does.
 */
export async function listAwaiting(
  ctx: CommandContext,
  stateUrl: string | undefined,
  what: string,
): Promise<void> {
  const [{ stateUrlOf }, { needsSharedHistory }, { awaitingApproval, printPreparedTable }] =
    await Promise.all([
      import('../state-url.js'),
      import('../../core/approvals/common.js'),
      import('../../core/runs/prepared.js'),
    ]);
  const url = await stateUrlOf(ctx, stateUrl);
  if (url === undefined) throw needsSharedHistory(what);
  const awaiting = await awaitingApproval(url);
  if (ctx.output.json) {
    ctx.output.document({ command: 'approvals list', ...awaiting });
    return;
  }
  const role = displayText(awaiting.role);
  if (awaiting.runs.length === 0) {
    ctx.output.print(`Nothing awaits approval by role ${role}.`);
    return;
  }
  const n = awaiting.runs.length;
  await printPreparedTable(
    awaiting.runs,
    ctx.output,
    `Awaiting approval by role ${role} (${n} prepared run${n === 1 ? '' : 's'}):`,
  );
  ctx.output.printAside('To review one and decide: payouts approve RUN (--reject --reason TEXT)');
}
