import type { Command } from 'commander';
import type { Runtime } from '../../context.js';
import { UsageError } from '../../errors.js';
import { defineAction, type ExitSink, examples } from '../command.js';
import { intOption } from '../options.js';

/** Options of `payouts runs list`. */
interface ListFlags {
  stateUrl?: string;
  page?: number;
  all?: boolean;
}

/** Registers `payouts runs list` (also what `payouts runs` does). */
export function registerRunsList(runs: Command, runtime: Runtime, sink: ExitSink): void {
  const cmd = runs
    .command('list', { isDefault: true })
    .description('list journaled runs with their counts, newest first, 20 at a time')
    .option(
      '--state-url <url>',
      'read the runs of a shared history, postgres://… (default: PAYOUTS_STATE_URL, else the state folder)',
    )
    .option(
      '--page <n>',
      'show the Nth 20 runs (default 1: the 20 most recently active)',
      intOption('--page', 1, 1_000_000),
    )
    .option('--all', 'show every run')
    .addHelpText(
      'after',
      examples('payouts runs', 'payouts runs --page 2', 'payouts runs --all --json'),
    );
  defineAction<[], ListFlags>(cmd, runtime, sink, async (ctx, flags) => {
    if (flags.all && flags.page !== undefined) {
      throw new UsageError('--page and --all cannot be combined: --all shows every run');
    }
    const [{ showRunList }, { stateDir }] = await Promise.all([
      import('../../core/runs/runs.js'),
      import('../../paths.js'),
    ]);
    const { stateUrlOf } = await import('../state-url.js');
    const stateUrl = await stateUrlOf(ctx, flags.stateUrl);
    return showRunList({ stateDir: stateDir(ctx.runtime.env), stateUrl }, ctx.output, {
      page: flags.page ?? 1,
      all: flags.all === true,
    });
  });
}
