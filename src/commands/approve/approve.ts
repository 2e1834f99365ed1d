import type { Command } from 'commander';
import type { Runtime } from '../../context.js';
import { exitCodesHelp } from '../../exit-codes.js';
import { UsageError } from '../../errors.js';
import { defineAction, type ExitSink, examples } from '../command.js';

/** Options of `payouts approve`. */
interface ApproveFlags {
  yes?: boolean;
  reject?: boolean;
  reason?: string;
  stateUrl?: string;
  all?: boolean;
}

/** Registers `payouts approve RUN`. */
export function registerApprove(program: Command, runtime: Runtime, sink: ExitSink): void {
  const cmd = program
    .command('approve')
    .description('approve (or reject) a run another person prepared with send --prepare')
    .argument('[run]', 'the prepared run id, or a unique prefix of it (none: list what awaits you)')
    .option('-y, --yes', 'approve without asking')
    .option('--reject', 'reject the run instead (with --reason)')
    .option('--reason <text>', 'why it is rejected')
    .option('--all', 'list every payout in the table, not the first 50')
    .option(
      '--state-url <url>',
      'the shared history, postgres://… (default: PAYOUTS_STATE_URL, else the profile)',
    )
    .addHelpText(
      'after',
      `${examples('payouts approve p3f2a9c', 'payouts approve p3f2a9c --reject --reason "wrong month"')}
Shows every payout (those that call for attention first: new recipients, changes since the
last approved or the rejected run of its series, a changed recipient named, paid earlier, the
largest), then asks; the decision keeps that screen. A refusal records nothing: your own
run, already decided or sent, not confirmed, or no shared history (exit 2); rejected (10);
expired (11).

${exitCodesHelp('approve')}`,
    );
  defineAction<[string | undefined], ApproveFlags>(
    cmd,
    runtime,
    sink,
    async (ctx, flags, prepId) => {
      if (prepId === undefined) {
        // What to approve is the question of someone who typed no run: the list answers it.
        if (!ctx.output.json)
          await (await import('../approvals/awaiting.js')).listAwaiting(
            ctx,
            flags.stateUrl,
            'approve',
          );
        throw new UsageError(
          'name the prepared run to approve: payouts approve RUN (payouts approvals lists what awaits your approval)',
        );
      }
      if (flags.reject && !flags.reason?.trim()) {
        throw new UsageError(
          '--reject needs --reason TEXT: say why, for the person who prepared it',
        );
      }
      if (!flags.reject && flags.reason !== undefined) {
        throw new UsageError('--reason goes with --reject');
      }
      const [{ stateUrlOf, readerBaseUrl }, { needsSharedHistory }, { approveRun }] =
        await Promise.all([
          import('../state-url.js'),
          import('../../core/approvals/common.js'),
          import('../../core/approvals/approve.js'),
        ]);
      const url = await stateUrlOf(ctx, flags.stateUrl);
      if (url === undefined) throw needsSharedHistory('approve');
      const baseUrl = await readerBaseUrl(ctx);
      return approveRun(
        {
          url,
          prepId,
          yes: Boolean(flags.yes),
          all: Boolean(flags.all),
          ...(baseUrl === undefined ? {} : { baseUrl }),
          ...(flags.reject ? { reject: { reason: flags.reason!.trim() } } : {}),
        },
        ctx.output,
      );
    },
  );
}
