import type { Command } from 'commander';
import type { Runtime } from '../../context.js';
import { UsageError } from '../../errors.js';
import { ExitCode } from '../../exit-codes.js';
import { defineAction, type ExitSink, examples } from '../command.js';

/** The settings `config set` stores, by name, with the profile field each goes to. */
const KEYS = { state_url: 'stateUrl' } as const;

/** Registers `payouts config set KEY VALUE`. */
export function registerSet(config: Command, runtime: Runtime, sink: ExitSink): void {
  const cmd = config
    .command('set')
    .description('store a setting of a profile: state_url, a shared history (postgres://…)')
    .argument('<key>', `the setting: ${Object.keys(KEYS).join(', ')}`)
    .argument('<value>', 'its value; "" removes it')
    .addHelpText(
      'after',
      examples(
        'payouts config set state_url postgres://payouts:PASSWORD@db.example.com/payouts?sslmode=require',
        'payouts config set state_url ""   # back to the state folder',
      ),
    );
  defineAction<[string, string], object>(cmd, runtime, sink, async (ctx, _flags, key, value) => {
    if (!Object.hasOwn(KEYS, key)) {
      throw new UsageError(
        `config set ${JSON.stringify(key)}: unknown setting; the settings are ${Object.keys(KEYS).join(', ')} (credentials: config set-credentials)`,
      );
    }
    const [{ selectedProfile }, { loadStore }, { chooseStateUrl, redactStateUrl }] =
      await Promise.all([
        import('../../core/config/profile.js'),
        import('../../core/service.js'),
        import('../../state/pg/url.js'),
      ]);
    const stored = value === '' ? undefined : chooseStateUrl({ value, from: key });
    const profile = selectedProfile(ctx.globals.profile, ctx.runtime.env).value;
    const store = await loadStore(ctx);
    store.saveProfile(profile, { [KEYS[key as keyof typeof KEYS]]: stored });
    const shown = stored === undefined ? null : redactStateUrl(stored);
    ctx.output.result({ profile, key, value: shown, path: store.path }, () =>
      shown === null
        ? `Removed ${key} from profile "${profile}": its runs keep their history in the state folder`
        : `Saved ${key} of profile "${profile}": ${shown} (in ${store.path})`,
    );
    return ExitCode.ok;
  });
}
