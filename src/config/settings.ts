import { normalizeBaseUrl } from '../api/base-url.js';
import { type CredentialCheck, checkCredential, Secret } from '../api/secret.js';
import { CredentialsError, UsageError } from '../errors.js';
import type { Env } from '../paths.js';
import type { StoredProfile } from './store.js';

/** Where a setting's value came from, shown by `config show`. */
export type Source = 'flag' | 'environment' | 'file' | 'sandbox' | 'default';

/** A setting with its origin. */
export interface Sourced<T> {
  value: T;
  source: Source;
}

/** The connection settings of a run, each with its origin. */
export interface Settings {
  profile: Sourced<string>;
  baseUrl?: Sourced<string>;
  clientId?: Sourced<string>;
  clientSecret?: Sourced<Secret>;
}

/** What the caller passes to resolve settings: flags, environment and a profile loader. */
export interface SettingsInput {
  flags: { profile?: string; baseUrl?: string };
  env: Env;
  /** Loads a stored profile; called at most once, and only when needed. */
  loadProfile: (name: string) => Promise<StoredProfile | undefined> | StoredProfile | undefined;
}

/** Picks the first defined value, recording where it came from. */
function pick<T>(...candidates: Array<[T | undefined, Source]>): Sourced<T> | undefined {
  for (const [value, source] of candidates) {
    if (value !== undefined && value !== '') return { value, source };
  }
  return undefined;
}

/** Resolves settings: flags, then PAYOUTS_* environment variables, then the stored profile. */
export async function resolveSettings(input: SettingsInput): Promise<Settings> {
  const { flags, env } = input;
  const profile = pick<string>(
    [flags.profile, 'flag'],
    [env.PAYOUTS_PROFILE, 'environment'],
    ['default', 'default'],
  ) as Sourced<string>;
  // Reading the config file costs start-up time; skip it when flags and environment say all.
  const coveredElsewhere =
    Boolean(flags.baseUrl || env.PAYOUTS_BASE_URL) &&
    Boolean(env.PAYOUTS_CLIENT_ID) &&
    Boolean(env.PAYOUTS_CLIENT_SECRET);
  const stored = (coveredElsewhere ? undefined : await input.loadProfile(profile.value)) ?? {};
  const baseUrl = pick<string>(
    [flags.baseUrl, 'flag'],
    [env.PAYOUTS_BASE_URL, 'environment'],
    [stored.baseUrl, 'file'],
  );
  if (baseUrl) {
    const label = {
      flag: '--base-url',
      environment: 'PAYOUTS_BASE_URL',
      file: `base URL of profile "${profile.value}"`,
    }[baseUrl.source as 'flag' | 'environment' | 'file'];
    baseUrl.value = normalizeBaseUrl(baseUrl.value, label);
  }
  const clientId = pick<string>([env.PAYOUTS_CLIENT_ID, 'environment'], [stored.clientId, 'file']);
  const secretText = pick<string>(
    [env.PAYOUTS_CLIENT_SECRET, 'environment'],
    [stored.clientSecret, 'file'],
  );
  const clientSecret = secretText
    ? { value: new Secret(secretText.value), source: secretText.source }
    : undefined;
  return { profile, baseUrl, clientId, clientSecret };
}

/** Settings with every value present, ready to build a client. */
export interface CompleteSettings {
  profile: string;
  baseUrl: string;
  clientId: string;
  clientSecret: Secret;
}

/** The `config set-credentials` command line for a profile. */
function setCredentialsCommand(profile: string): string {
  return `payouts config set-credentials${profile === 'default' ? '' : ` --profile ${profile}`}`;
}

/** Where a credential came from and how to correct it there, for checkCredential. */
function originOf(
  name: CredentialCheck['name'],
  s: Sourced<unknown>,
  where: { profile: string; configFile?: string },
): Pick<CredentialCheck, 'from' | 'fix'> {
  if (s.source === 'environment') {
    const variable = name === 'Client-Id' ? 'PAYOUTS_CLIENT_ID' : 'PAYOUTS_CLIENT_SECRET';
    return {
      from: variable,
      fix: `set ${variable} to the value the service issued, and nothing else`,
    };
  }
  const file = where.configFile === undefined ? '' : ` in ${where.configFile}`;
  return {
    from: `profile "${where.profile}"${file}`,
    fix: `store it again with \`${setCredentialsCommand(where.profile)}\``,
  };
}

/**
 * Checks that credentials and base URL are set, naming how to set what is missing, and that
 * the credentials can be sent as HTTP headers (CredentialsError naming where they came from).
 */
export function requireComplete(s: Settings, configFile?: string): CompleteSettings {
  if (!s.clientId || !s.clientSecret) {
    const missing = [!s.clientId && 'Client-Id', !s.clientSecret && 'Client-Secret']
      .filter(Boolean)
      .join(' and ');
    throw new CredentialsError(
      `no ${missing} for profile "${s.profile.value}": run \`${setCredentialsCommand(s.profile.value)}\`, or set PAYOUTS_CLIENT_ID and PAYOUTS_CLIENT_SECRET`,
    );
  }
  const where = { profile: s.profile.value, configFile };
  const { clientId, clientSecret } = s;
  checkCredential({
    name: 'Client-Id',
    value: clientId.value,
    ...originOf('Client-Id', clientId, where),
  });
  checkCredential({
    name: 'Client-Secret',
    value: clientSecret.value.reveal(),
    ...originOf('Client-Secret', clientSecret, where),
  });
  if (!s.baseUrl) {
    throw new UsageError(
      `no base URL for profile "${s.profile.value}": pass --base-url https://..., set PAYOUTS_BASE_URL, or store one with \`payouts config set-credentials --base-url URL\``,
    );
  }
  return {
    profile: s.profile.value,
    baseUrl: s.baseUrl.value,
    clientId: s.clientId.value,
    clientSecret: s.clientSecret.value,
  };
}
