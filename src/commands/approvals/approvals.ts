import type { Command } from 'commander';
import type { Runtime } from '../../context.js';
import type { CommandContext } from '../../context.js';
import { UsageError } from '../../errors.js';
import { defineAction, type ExitSink, examples } from '../command.js';
import { intOption } from '../options.js';

/** The shared history and service a rule command is about; refused on a local history. */
async function ruleTarget(ctx: CommandContext, flag: string | undefined, what: string) {
  const [{ stateUrlOf }, { loadSettings, serviceKeyOf }, { needsSharedHistory }] =
    await Promise.all([
      import('../state-url.js'),
      import('../../core/service.js'),
      import('../../core/approvals/common.js'),
    ]);
  const url = await stateUrlOf(ctx, flag);
  if (url === undefined) throw needsSharedHistory(what);
  const baseUrl = (await loadSettings(ctx)).baseUrl?.value;
  if (baseUrl === undefined) {
    throw new UsageError(
      `${what} is about one service: set its base URL (--base-url, PAYOUTS_BASE_URL or the profile)`,
    );
  }
  return { url, serviceKey: serviceKeyOf(baseUrl), service: baseUrl };
}

const STATE_URL_HELP =
  'the shared history, postgres://… (default: PAYOUTS_STATE_URL, else the profile)';

/** Registers `payouts approvals require|off|show`. */
export function registerApprovals(program: Command, runtime: Runtime, sink: ExitSink): void {
  const approvals = program
    .command('approvals')
    .description("another person's approval before a run sends (a shared history only)");
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
  const show = approvals
    .command('show', { isDefault: true })
    .description('the rule in force for the service, and every change of it')
    .option('--state-url <url>', STATE_URL_HELP);
  defineAction<[], { stateUrl?: string }>(show, runtime, sink, async (ctx, flags) => {
    const target = await ruleTarget(ctx, flags.stateUrl, 'approvals show');
    const { showRule } = await import('../../core/approvals/rule.js');
    return showRule(target, ctx.output);
  });
}
