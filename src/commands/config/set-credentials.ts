import type { Command } from 'commander';
import type { Runtime } from '../../context.js';
import { ExitCode } from '../../exit-codes.js';
import { defineAction, type ExitSink, examples } from '../command.js';

/** Options of `config set-credentials`. */
interface SetCredentialsOptions {
  clientId?: string;
  clientSecretStdin?: boolean;
  /** False with --no-keyring. */
  keyring: boolean;
}

/** Registers `payouts config set-credentials`. */
export function registerSetCredentials(config: Command, runtime: Runtime, sink: ExitSink): void {
  const cmd = config
    .command('set-credentials')
    .description(
      'store the Client-Id, Client-Secret and base URL of a profile (asks on a terminal)',
    )
    .option('--client-id <id>', 'the Client-Id (asked on a terminal when left out)')
    .option(
      '--client-secret-stdin',
      'read the Client-Secret from standard input (one trailing newline is removed)',
    )
    .option('--no-keyring', 'store the Client-Secret in the config file, not the system keyring')
    .addHelpText(
      'after',
      `${examples(
        'payouts config set-credentials --base-url https://pay.example.com',
        'printf \'%s\' "$SECRET" | payouts config set-credentials --client-id ID --client-secret-stdin',
        'payouts --profile staging config set-credentials',
      )}
The profile is --profile NAME (default "default"); --base-url URL stores its base URL. There is no
option that takes the secret itself: command lines are visible to other users.
The Client-Secret goes to the system keyring (service "payouts", account = profile) when one
can be reached, else to the config file, readable by you only (0600, in a 0700 folder; see
"payouts config path"). --no-keyring chooses the file.
`,
    );
  defineAction<[], SetCredentialsOptions>(cmd, runtime, sink, async (ctx, opts) => {
    // Loaded when the command runs, so start-up of every other command stays light.
    const [
      { collectCredentials, saveCredentials, secretStoredLine },
      { selectedProfile },
      { loadStore, openSecretStore },
    ] = await Promise.all([
      import('../../core/config/credentials.js'),
      import('../../core/config/profile.js'),
      import('../../core/service.js'),
    ]);
    const profile = selectedProfile(ctx.globals.profile, ctx.runtime.env).value;
    const store = await loadStore(ctx);
    const creds = await collectCredentials(
      {
        clientId: opts.clientId,
        secretFromStdin: opts.clientSecretStdin,
        baseUrl: ctx.globals.baseUrl,
      },
      { output: ctx.output, stdin: ctx.runtime.stdin, existing: store.profile(profile) },
    );
    const { saved, warnings } = await saveCredentials(store, profile, creds, {
      useKeyring: opts.keyring,
      open: () => openSecretStore(ctx),
    });
    for (const warning of warnings) ctx.output.warn(warning);
    ctx.output.result(
      saved,
      () =>
        `Saved profile "${saved.profile}" (Client-Id ${saved.client_id}) to ${saved.path}\n${secretStoredLine(saved)}`,
    );
    if (saved.base_url === null) {
      ctx.output.warn(
        'no base URL stored for this profile: add one with --base-url https://..., or set PAYOUTS_BASE_URL',
      );
    }
    return ExitCode.ok;
  });
}
