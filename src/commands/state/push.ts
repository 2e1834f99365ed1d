import type { Command } from 'commander';
import type { Runtime } from '../../context.js';
import { defineAction, type ExitSink, examples } from '../command.js';

/** Registers `payouts state push --to URL`. */
export function registerStatePush(state: Command, runtime: Runtime, sink: ExitSink): void {
  const cmd = state
    .command('push')
    .description(
      "copy this state folder's runs into a shared history, so a team starts from what was sent here",
    )
    .requiredOption('--to <url>', 'the shared history, postgres://USER:PASSWORD@HOST/DB')
    .addHelpText(
      'after',
      examples(
        'payouts state push --to postgres://payouts@db.example.com/payouts',
        'payouts state push --to "$PAYOUTS_STATE_URL" --json',
      ),
    );
  defineAction<[], { to: string }>(cmd, runtime, sink, async (ctx, flags) => {
    const [{ pushState }, { stateDir }, { chooseStateUrl }] = await Promise.all([
      import('../../core/state/push.js'),
      import('../../paths.js'),
      import('../../state/pg/url.js'),
    ]);
    const to = chooseStateUrl({ value: flags.to, from: '--to' })!;
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
