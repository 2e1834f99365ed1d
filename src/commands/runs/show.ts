import type { Command } from 'commander';
import type { Runtime } from '../../context.js';
import { defineAction, type ExitSink, examples } from '../command.js';

/** Registers `payouts runs show ID`. */
export function registerRunsShow(runs: Command, runtime: Runtime, sink: ExitSink): void {
  const cmd = runs
    .command('show')
    .description("show one run's payouts and their states")
    .argument('<run-id>', 'run id, or a unique prefix of it')
    .option(
      '--state-url <url>',
      'read the runs of a shared history, postgres://… (default: PAYOUTS_STATE_URL, else the state folder)',
    )
    .addHelpText('after', examples('payouts runs show 3f2a9c', 'payouts runs show 3f2a9c --json'));
  defineAction<[string], { stateUrl?: string }>(cmd, runtime, sink, async (ctx, flags, id) => {
    const [{ showRun }, { stateDir }] = await Promise.all([
      import('../../core/runs/runs.js'),
      import('../../paths.js'),
    ]);
    const { stateUrlOf } = await import('../state-url.js');
    const stateUrl = await stateUrlOf(ctx, flags.stateUrl);
    return showRun({ stateDir: stateDir(ctx.runtime.env), stateUrl }, id, ctx.output);
  });
}
