import type { Command } from 'commander';
import type { Runtime } from '../../context.js';
import { type ExitSink, examples } from '../command.js';
import { registerCheck } from './check.js';
import { registerPath } from './path.js';
import { registerRemove } from './remove.js';
import { registerSet } from './set.js';
import { registerSetCredentials } from './set-credentials.js';
import { registerShow } from './show.js';

/** Registers `payouts config` and its subcommands. */
export function registerConfig(program: Command, runtime: Runtime, sink: ExitSink): void {
  const config = program
    .command('config')
    .description('store, show and check the credentials of a profile')
    .addHelpText(
      'after',
      `${examples(
        'payouts config set-credentials --base-url https://pay.example.com',
        'printf \'%s\' "$SECRET" | payouts config set-credentials --client-id ID --client-secret-stdin',
        'payouts config show',
        'payouts config set quiet_time 120   # a service slow to show what it applied',
        'payouts config check',
        'payouts --profile staging config remove',
      )}
Settings are taken from flags, then the environment (PAYOUTS_CLIENT_ID, PAYOUTS_CLIENT_SECRET,
PAYOUTS_BASE_URL, PAYOUTS_PROFILE, PAYOUTS_STATE_URL), then the stored profile.
`,
    );
  registerSetCredentials(config, runtime, sink);
  registerSet(config, runtime, sink);
  registerShow(config, runtime, sink);
  registerPath(config, runtime, sink);
  registerCheck(config, runtime, sink);
  registerRemove(config, runtime, sink);
}
