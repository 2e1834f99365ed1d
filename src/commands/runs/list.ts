import type { Command } from 'commander';
import type { Runtime } from '../../context.js';
import { defineAction, type ExitSink, examples } from '../command.js';

/** Registers `payouts runs list` (also what `payouts runs` does). */
export function registerRunsList(runs: Command, runtime: Runtime, sink: ExitSink): void {
  const cmd = runs
    .command('list', { isDefault: true })
    .description('list journaled runs with their counts, newest first')
    .addHelpText('after', examples('payouts runs', 'payouts runs --json'));
  defineAction<[], object>(cmd, runtime, sink, async (ctx) => {
    const [{ showRunList }, { stateDir }] = await Promise.all([
      import('../../core/runs/runs.js'),
      import('../../paths.js'),
    ]);
    return showRunList(stateDir(ctx.runtime.env), ctx.output);
  });
}
