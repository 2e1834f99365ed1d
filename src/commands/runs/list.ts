import type { Command } from 'commander';
import type { Runtime } from '../../context.js';
import { defineAction, type ExitSink, examples } from '../command.js';

/** Registers `payouts runs list` (also what `payouts runs` does). */
export function registerRunsList(runs: Command, runtime: Runtime, sink: ExitSink): void {
  const cmd = runs
    .command('list', { isDefault: true })
    .description('list journaled runs with their counts, newest first')
    .option(
      '--state-url <url>',
      'read the runs of a shared history, postgres://… (default: PAYOUTS_STATE_URL, else the state folder)',
    )
    .addHelpText('after', examples('payouts runs', 'payouts runs --json'));
  defineAction<[], { stateUrl?: string }>(cmd, runtime, sink, async (ctx, flags) => {
    const [{ showRunList }, { stateDir }] = await Promise.all([
      import('../../core/runs/runs.js'),
      import('../../paths.js'),
    ]);
    const { stateUrlOf } = await import('../state-url.js');
    const stateUrl = await stateUrlOf(ctx, flags.stateUrl);
    return showRunList({ stateDir: stateDir(ctx.runtime.env), stateUrl }, ctx.output);
  });
}
