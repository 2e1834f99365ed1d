import type { Command } from 'commander';
import type { Runtime } from '../../context.js';
import { ExitCode } from '../../exit-codes.js';
import { defineAction, type ExitSink, examples } from '../command.js';

/** Registers `payouts config set`. */
export function registerSet(config: Command, runtime: Runtime, sink: ExitSink): void {
  const cmd = config
    .command('set')
    .description(
      'store a setting of a profile: base_url (the service, no secret needed), quiet_time (seconds, for a slow service), state_url (a shared history)',
    )
    .argument('<key>', 'the setting: base_url, quiet_time or state_url')
    .argument('<value>', 'its value, or "default" to remove it')
    .addHelpText(
      'after',
      `${examples(
        'payouts config set base_url https://pay.example.com',
        'payouts config set quiet_time 120',
        'payouts --profile slow config set quiet_time default',
        'payouts config set state_url "postgres://payouts@db.example.com/payouts?sslmode=verify-full"',
      )}
base_url: the Payout Service, for a profile without a secret (someone who prepares or
approves runs: send --prepare needs the service, not the secret).
quiet_time: how long after a request "Payout not found" starts to count, in seconds; it only
lengthens the one PAYOUTS_TIMEOUT gives (docs/never-twice.md).
state_url: a history shared by the team's machines, postgres://… (docs/shared-history.md);
"default" keeps the history in the state folder again. Never put its password in the URL
here: on a terminal it is asked for (not shown), else PGPASSWORD or ~/.pgpass give it.
`,
    );
  defineAction<[string, string], Record<string, never>>(
    cmd,
    runtime,
    sink,
    async (ctx, _flags, key, value) => {
      // Loaded when the command runs, so start-up of every other command stays light.
      const [{ setProfileSetting, shortQuietTime }, { selectedProfile }, { loadStore }] =
        await Promise.all([
          import('../../core/config/set.js'),
          import('../../core/config/profile.js'),
          import('../../core/service.js'),
        ]);
      const profile = selectedProfile(ctx.globals.profile, ctx.runtime.env).value;
      const askPassword = ctx.output.interactive
        ? (question: string) => ctx.output.ask(question, true)
        : undefined;
      const { set, changed } = await setProfileSetting(
        await loadStore(ctx),
        profile,
        { key, value },
        { askPassword },
      );
      const short = shortQuietTime(set, ctx.runtime.env.PAYOUTS_TIMEOUT);
      if (short) ctx.output.warn(short);
      ctx.output.result(set, () =>
        set.value !== null
          ? `Set ${key} to ${set.value} for profile "${profile}" in ${set.path}`
          : changed
            ? `Removed ${key} from profile "${profile}" in ${set.path}`
            : `Profile "${profile}" has no ${key} in ${set.path}: nothing to remove`,
      );
      return ExitCode.ok;
    },
  );
}
