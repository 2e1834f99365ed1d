import type { Command } from 'commander';
import type { Runtime } from '../../context.js';
import { defineAction, type ExitSink, examples } from '../command.js';
import { intOption } from '../options.js';
import { ruleTarget, STATE_URL_HELP } from './target.js';

/** Registers `payouts approvals require`. */
export function registerRequire(approvals: Command, runtime: Runtime, sink: ExitSink): void {
  const require = approvals
    .command('require')
    .description('turn the rule on for the service: every run, or runs above an amount')
    .option(
      '--above <CUR=AMOUNT>',
      'runs whose total in CUR is above AMOUNT (CUR=none: never); a currency not named always needs approval; repeatable',
      (v: string, all: string[] = []) => [...all, v],
    )
    .option(
      '--approvers <n>',
      'distinct people, none the preparer, who approve each run',
      intOption('--approvers', 1, 10),
      1,
    )
    .option(
      '--expires-days <n>',
      'days a prepared run may be approved in',
      intOption('--expires-days', 1, 365),
      7,
    )
    .option('--state-url <url>', STATE_URL_HELP)
    .addHelpText(
      'after',
      examples(
        'payouts approvals require',
        'payouts approvals require --above EUR=10000 --above USD=none',
        'payouts approvals require --approvers 2 --above EUR=50000',
      ),
    );
  defineAction<[], { above?: string[]; approvers: number; expiresDays: number; stateUrl?: string }>(
    require,
    runtime,
    sink,
    async (ctx, flags) => {
      const target = await ruleTarget(ctx, flags.stateUrl, 'approvals require');
      const [{ changeRule }, { parseAbove }, { CurrencyTable }] = await Promise.all([
        import('../../core/approvals/rule.js'),
        import('../../core/approvals/common.js'),
        import('../../money/currencies.js'),
      ]);
      const currencies = new CurrencyTable([]);
      const above = (flags.above ?? []).map((a) => parseAbove(a, currencies));
      return changeRule(
        target,
        { active: true, above, expires_days: flags.expiresDays, approvers: flags.approvers },
        ctx.output,
      );
    },
  );
}
