import type { Command } from 'commander';
import type { Runtime } from '../../context.js';
import { ExitCode } from '../../exit-codes.js';
import { defineAction, type ExitSink, examples } from '../command.js';

/** Registers `payouts config path`. */
export function registerPath(config: Command, runtime: Runtime, sink: ExitSink): void {
  const cmd = config
    .command('path')
    .description('print the path of the config file')
    .addHelpText('after', examples('payouts config path', 'ls -l "$(payouts config path)"'));
  defineAction<[], Record<string, never>>(cmd, runtime, sink, async (ctx) => {
    // Loaded when the command runs, so start-up of every other command stays light.
    const { loadStore } = await import('../../core/service.js');
    const { path } = await loadStore(ctx);
    // The path alone on the last line, so "$(payouts config path)" works in scripts.
    ctx.output.result({ path }, () => path);
    return ExitCode.ok;
  });
}
