import type { Command } from 'commander';
import type { Runtime } from '../../context.js';
import { ExitCode, exitCodesHelp } from '../../exit-codes.js';
import { defineAction, type ExitSink, examples } from '../command.js';

/** Registers `payouts config remove`. */
export function registerRemove(config: Command, runtime: Runtime, sink: ExitSink): void {
  const cmd = config
    .command('remove')
    .description(
      'delete a stored profile (the one named by --profile, default "default") and its keyring entry',
    )
    .addHelpText(
      'after',
      `${examples('payouts config remove', 'payouts --profile staging config remove')}

${exitCodesHelp('config remove')}`,
    );
  defineAction<[], Record<string, never>>(cmd, runtime, sink, async (ctx) => {
    // Loaded when the command runs, so start-up of every other command stays light.
    const [{ removeProfile, selectedProfile }, { loadStore, openSecretStore }] = await Promise.all([
      import('../../core/config/profile.js'),
      import('../../core/service.js'),
    ]);
    const profile = selectedProfile(ctx.globals.profile, ctx.runtime.env).value;
    const removed = await removeProfile(await loadStore(ctx), profile, {
      open: () => openSecretStore(ctx),
      warn: (line) => ctx.output.warn(line),
    });
    const places = [
      removed.from_file && removed.path,
      removed.from_keyring && 'the system keyring',
    ].filter(Boolean);
    ctx.output.result(
      { removed: true, ...removed },
      () => `Removed profile "${removed.profile}" from ${places.join(' and ')}`,
    );
    return ExitCode.ok;
  });
}
