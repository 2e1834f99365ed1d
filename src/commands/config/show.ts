import { join } from 'node:path';
import type { Command } from 'commander';
import type { Runtime } from '../../context.js';
import { ExitCode } from '../../exit-codes.js';
import { defineAction, type ExitSink, examples } from '../command.js';

/** Registers `payouts config show`. */
export function registerShow(config: Command, runtime: Runtime, sink: ExitSink): void {
  const cmd = config
    .command('show')
    .description('show the settings in effect and where each comes from (the secret masked)')
    .addHelpText(
      'after',
      examples('payouts config show', 'payouts --profile staging config show --json'),
    );
  defineAction<[], Record<string, never>>(cmd, runtime, sink, async (ctx) => {
    // Loaded when the command runs, so start-up of every other command stays light.
    const [
      { selectedProfile },
      { describeSettings, renderSettings },
      { loadSettings, loadStore },
      { stateDir },
    ] = await Promise.all([
      import('../../core/config/profile.js'),
      import('../../core/config/show.js'),
      import('../../core/service.js'),
      import('../../paths.js'),
    ]);
    selectedProfile(ctx.globals.profile, ctx.runtime.env);
    const store = await loadStore(ctx);
    const stateDb = join(stateDir(ctx.runtime.env), 'state.db');
    const settings = await loadSettings(ctx);
    const view = describeSettings(settings, store.path, store.profileNames(), stateDb);
    ctx.output.result(view, () => renderSettings(view));
    return ExitCode.ok;
  });
}
