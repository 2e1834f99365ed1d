import type { Command } from 'commander';
import type { Runtime } from '../../context.js';
import { UsageError } from '../../errors.js';
import { defineAction, type ExitSink, examples } from '../command.js';

/** Registers `payouts state push --to URL`. */
export function registerStatePush(state: Command, runtime: Runtime, sink: ExitSink): void {
  const cmd = state
    .command('push')
    .description(
      "copy this state folder's runs into a shared history, so a team starts from what was sent here",
    )
    .option(
      '--to <url>',
      'the shared history, postgres://USER@HOST/DB?sslmode=verify-full (default: PAYOUTS_STATE_URL, else the profile; the password from PGPASSWORD or ~/.pgpass)',
    )
    .addHelpText(
      'after',
      examples(
        'payouts state push --to "postgres://payouts@db.example.com/payouts?sslmode=verify-full"',
        'payouts state push --json     # to PAYOUTS_STATE_URL',
      ),
    );
  defineAction<[], { to?: string }>(cmd, runtime, sink, async (ctx, flags) => {
    const [{ pushState }, { stateDir }, { stateUrlOf }] = await Promise.all([
      import('../../core/state/push.js'),
      import('../../paths.js'),
      import('../state-url.js'),
    ]);
    const to = await stateUrlOf(ctx, flags.to, '--to');
    if (to === undefined) {
      throw new UsageError(
        'state push needs the shared history to copy into: give --to postgres://USER@HOST/DB?sslmode=verify-full, or set PAYOUTS_STATE_URL',
      );
    }
    return pushState(
      {
        stateDir: stateDir(ctx.runtime.env),
        to,
        pid: ctx.runtime.pid,
        commandLine: 'payouts state push',
      },
      ctx.output,
    );
  });
}
