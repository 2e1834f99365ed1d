import { normalizeBaseUrl } from '../api/base-url.js';
import { type CredentialCheck, checkCredential, Secret } from '../api/secret.js';
import { CredentialsError, UsageError } from '../errors.js';
import type { Env } from '../paths.js';
import { KeyringError, keyringEntry } from './keyring.js';
import type { StoredProfile } from './store.js';

/** Where a setting's value came from, shown by `config show`. */
export type Source = 'flag' | 'environment' | 'file' | 'keyring' | 'sandbox' | 'default';

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
  /** Why the profile's Client-Secret, kept in the system keyring, could not be read. */
  secretProblem?: string;
  /** A shared history (postgres://…), from PAYOUTS_STATE_URL or the profile's state_url. */
  stateUrl?: Sourced<string>;
}

/** What the caller passes to resolve settings: flags, environment and a profile loader. */
export interface SettingsInput {
  flags: { profile?: string; baseUrl?: string };
  env: Env;
  /** Loads a stored profile; called at most once, and only when needed. */
  loadProfile: (name: string) => Promise<StoredProfile | undefined> | StoredProfile | undefined;
  /**
   * Reads a profile's Client-Secret from the system keyring (undefined: no entry; KeyringError:
   * unreachable); called only when the profile says the secret is there.
   */
  loadSecret?: (profile: string) => Promise<string | undefined>;
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
  const fromEnv = pick<string>([env.PAYOUTS_CLIENT_SECRET, 'environment']);
  const { secret: secretText, problem } = fromEnv
    ? { secret: fromEnv }
    : await storedSecret(profile.value, stored, input.loadSecret);
  const clientSecret = secretText
    ? { value: new Secret(secretText.value), source: secretText.source }
    : undefined;
  const stateUrl = pick<string>([env.PAYOUTS_STATE_URL, 'environment'], [stored.stateUrl, 'file']);
  return {
    profile,
    baseUrl,
    clientId,
    clientSecret,
    ...(stateUrl ? { stateUrl } : {}),
    ...(problem !== undefined ? { secretProblem: problem } : {}),
  };
}

/** A profile's stored Client-Secret, from the file or the system keyring, or why it cannot be read. */
async function storedSecret(
  profile: string,
  stored: StoredProfile,
  loadSecret: SettingsInput['loadSecret'],
): Promise<{ secret?: Sourced<string>; problem?: string }> {
  if (stored.secretIn !== 'keyring') return { secret: pick([stored.clientSecret, 'file']) };
  const again = `store it again with \`${setCredentialsCommand(profile)}\`, or set PAYOUTS_CLIENT_SECRET`;
  const where = `the Client-Secret of profile "${profile}" is in the system keyring`;
  try {
    const secret = loadSecret === undefined ? undefined : await loadSecret(profile);
    if (secret !== undefined) return { secret: { value: secret, source: 'keyring' } };
    return { problem: `${where}, which has no entry for it (${keyringEntry(profile)}): ${again}` };
  } catch (error) {
    if (!(error instanceof KeyringError)) throw error;
    return { problem: `${where}, which cannot be reached: ${error.reason}; ${again}` };
  }
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
  const file =
    s.source === 'keyring'
      ? ' in the system keyring'
      : where.configFile === undefined
        ? ''
        : ` in ${where.configFile}`;
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
  if (!s.clientSecret && s.secretProblem !== undefined) throw new CredentialsError(s.secretProblem);
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
      `no base URL for profile "${s.profile.value}": pass --base-url https://..., set PAYOUTS_BASE_URL, or store one with \`payouts config set base_url URL\``,
    );
  }
  return {
    profile: s.profile.value,
    baseUrl: s.baseUrl.value,
    clientId: s.clientId.value,
    clientSecret: s.clientSecret.value,
  };
}
