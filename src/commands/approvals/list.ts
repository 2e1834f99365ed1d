import type { Command } from 'commander';
import type { Runtime } from '../../context.js';
import { ExitCode } from '../../exit-codes.js';
import { defineAction, type ExitSink, examples } from '../command.js';
import { STATE_URL_HELP } from './target.js';

/** Registers `payouts approvals list` (also what `payouts approvals` does). */
export function registerList(approvals: Command, runtime: Runtime, sink: ExitSink): void {
  const cmd = approvals
    .command('list', { isDefault: true })
    .description("the prepared runs awaiting your approval (your role's), newest first")
    .option('--state-url <url>', STATE_URL_HELP)
    .addHelpText('after', examples('payouts approvals', 'payouts approvals list --json'));
  defineAction<[], { stateUrl?: string }>(cmd, runtime, sink, async (ctx, flags) => {
    const { listAwaiting } = await import('./awaiting.js');
    await listAwaiting(ctx, flags.stateUrl, 'approvals list');
    return ExitCode.ok;
  });
}
