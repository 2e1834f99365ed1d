import type { Command } from 'commander';
import type { Runtime } from '../../context.js';
import { defineAction, type ExitSink } from '../command.js';
import { ruleTarget, STATE_URL_HELP } from './target.js';

/** Registers `payouts approvals off`. */
export function registerOff(approvals: Command, runtime: Runtime, sink: ExitSink): void {
  const off = approvals
    .command('off')
    .description('turn the rule off for the service (recorded, with who and when)')
    .option('--state-url <url>', STATE_URL_HELP);
  defineAction<[], { stateUrl?: string }>(off, runtime, sink, async (ctx, flags) => {
    const target = await ruleTarget(ctx, flags.stateUrl, 'approvals off');
    const { changeRule } = await import('../../core/approvals/rule.js');
    return changeRule(
      target,
      { active: false, above: [], expires_days: 7, approvers: 1 },
      ctx.output,
    );
  });
}
