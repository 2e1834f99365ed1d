import type { Command } from 'commander';
import type { Runtime } from '../../context.js';
import { defineAction, type ExitSink, examples } from '../command.js';

/** Registers `payouts runs show ID`. */
export function registerRunsShow(runs: Command, runtime: Runtime, sink: ExitSink): void {
  const cmd = runs
    .command('show')
    .description("show one run's payouts and their states")
    .argument('<run-id>', 'run id, or a unique prefix of it')
    .addHelpText('after', examples('payouts runs show 3f2a9c', 'payouts runs show 3f2a9c --json'));
  defineAction<[string], object>(cmd, runtime, sink, async (ctx, _flags, id) => {
    const [{ showRun }, { stateDir }] = await Promise.all([
      import('../../core/runs/runs.js'),
      import('../../paths.js'),
    ]);
    return showRun(stateDir(ctx.runtime.env), id, ctx.output);
  });
}
