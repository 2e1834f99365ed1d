import type { Command } from 'commander';
import type { Runtime } from '../../context.js';
import { defineAction, type ExitSink } from '../command.js';
import { ruleTarget, STATE_URL_HELP } from './target.js';

/** Registers `payouts approvals show`. */
export function registerShow(approvals: Command, runtime: Runtime, sink: ExitSink): void {
  const show = approvals
    .command('show')
    .description('the rule in force for the service, and every change of it')
    .option('--state-url <url>', STATE_URL_HELP);
  defineAction<[], { stateUrl?: string }>(show, runtime, sink, async (ctx, flags) => {
    const target = await ruleTarget(ctx, flags.stateUrl, 'approvals show');
    const { showRule } = await import('../../core/approvals/rule.js');
    return showRule(target, ctx.output);
  });
}
