import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { CommandContext } from '../context.js';

/**
 * The shared history a command uses: --state-url (never with a password), else
 * PAYOUTS_STATE_URL, else the profile's state_url; undefined keeps the history in the state
 * folder. The profile is read only when neither of the others says, and always then: a run
 * must not miss the team's history because its credentials came from the environment.
 */
export async function stateUrlOf(
  ctx: CommandContext,
  flag: string | undefined,
  option = '--state-url',
): Promise<string | undefined> {
  const url = await chosenStateUrl(ctx, flag, option);
  return url === undefined ? undefined : passwordFor(ctx, url);
}

/**
 * The state URL with the password it connects with: its own, else PGPASSWORD, else the one
 * ~/.pgpass holds for it (none: node-postgres asks nothing, and a server that wants one says so).
 */
async function passwordFor(ctx: CommandContext, url: string): Promise<string> {
  const [{ carriesPassword, withPassword }, { pgpassPassword }] = await Promise.all([
    import('../state/pg/url.js'),
    import('../state/pg/pgpass.js'),
  ]);
  if (carriesPassword(url)) return url;
  const env = ctx.runtime.env;
  if (env.PGPASSWORD) return withPassword(url, env.PGPASSWORD);
  const found = pgpassPassword(url, env);
  if (found.warning) ctx.output.warn(found.warning);
  return withPassword(url, found.password);
}

/** The state URL in force, as given (see stateUrlOf). */
async function chosenStateUrl(
  ctx: CommandContext,
  flag: string | undefined,
  option: string,
): Promise<string | undefined> {
  const { chooseStateUrl } = await import('../state/pg/url.js');
  const given = chooseStateUrl(
    { value: flag, from: option, commandLine: true },
    { value: ctx.runtime.env.PAYOUTS_STATE_URL, from: 'PAYOUTS_STATE_URL' },
  );
  if (given !== undefined) return given;
  const [{ selectedProfile }, { loadStore }, { configDir }] = await Promise.all([
    import('../core/config/profile.js'),
    import('../core/service.js'),
    import('../paths.js'),
  ]);
  // No config file, no profile: opening the store would create its folder.
  if (!existsSync(join(configDir(ctx.runtime.env), 'config.json'))) return undefined;
  const profile = selectedProfile(ctx.globals.profile, ctx.runtime.env).value;
  const stored = (await loadStore(ctx)).profile(profile)?.stateUrl;
  return chooseStateUrl({ value: stored, from: `state_url of profile "${profile}"` });
}

/**
 * The reader's base URL as a send of theirs would take it (--base-url, PAYOUTS_BASE_URL, the
 * profile), no secret read: the approver's screen spells the service so. Undefined when none
 * is set or the settings cannot be read (the screen then shows the run's own spelling).
 */
export async function readerBaseUrl(ctx: CommandContext): Promise<string | undefined> {
  const [{ resolveSettings }, { loadStore }, { configDir }] = await Promise.all([
    import('../config/settings.js'),
    import('../core/service.js'),
    import('../paths.js'),
  ]);
  const stored = existsSync(join(configDir(ctx.runtime.env), 'config.json'));
  try {
    const s = await resolveSettings({
      flags: { profile: ctx.globals.profile, baseUrl: ctx.globals.baseUrl },
      env: ctx.runtime.env,
      // No config file: opening the store would create its folder.
      loadProfile: async (name) => (stored ? (await loadStore(ctx)).profile(name) : undefined),
    });
    return s.baseUrl?.value;
  } catch {
    return undefined;
  }
}
