import type { Sourced } from '../../config/settings.js';
import { KeyringError, keyringEntry, type SecretStoreFactory } from '../../config/keyring.js';
import type { ConfigStore } from '../../config/store.js';
import { UsageError } from '../../errors.js';
import type { Env } from '../../paths.js';

const PROFILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** Checks a profile name: letters, digits, ".", "_" and "-", starting with a letter or digit. */
export function checkProfileName(name: string, source: string): string {
  if (!PROFILE_NAME.test(name)) {
    throw new UsageError(
      `${source} ${JSON.stringify(name)}: a profile name is 1 to 64 letters, digits, ".", "_" or "-", starting with a letter or digit`,
    );
  }
  return name;
}

/** The profile a config command works on: --profile, else PAYOUTS_PROFILE, else "default". */
export function selectedProfile(flag: string | undefined, env: Env): Sourced<string> {
  if (flag !== undefined && flag !== '') {
    return { value: checkProfileName(flag, '--profile'), source: 'flag' };
  }
  if (env.PAYOUTS_PROFILE) {
    return {
      value: checkProfileName(env.PAYOUTS_PROFILE, 'PAYOUTS_PROFILE'),
      source: 'environment',
    };
  }
  return { value: 'default', source: 'default' };
}

/** What removing a profile did. */
export interface RemovedProfile {
  profile: string;
  path: string;
  /** Whether the config file had the profile. */
  from_file: boolean;
  /** Whether the system keyring had its Client-Secret. */
  from_keyring: boolean;
}

/**
 * Deletes a profile's keyring entry; returns whether there was one. An unreachable keyring
 * is a warning when the profile said its secret was there, and nothing otherwise.
 */
async function dropFromKeyring(
  name: string,
  secrets: { open: SecretStoreFactory; expected: boolean; warn: (line: string) => void },
): Promise<boolean> {
  try {
    return await (await secrets.open()).delete(name);
  } catch (error) {
    if (!(error instanceof KeyringError)) throw error;
    if (secrets.expected) {
      secrets.warn(
        `the Client-Secret of profile "${name}" remains in the system keyring (${keyringEntry(name)}), which cannot be reached: ${error.reason}; delete it with the keyring's own tool`,
      );
    }
    return false;
  }
}

/**
 * Deletes a stored profile from the config file and its Client-Secret from the system keyring;
 * a profile in neither is a usage error naming those that do exist.
 */
export async function removeProfile(
  store: ConfigStore,
  name: string,
  secrets: { open: SecretStoreFactory; warn: (line: string) => void },
): Promise<RemovedProfile> {
  const expected = store.profile(name)?.secretIn === 'keyring';
  const fromKeyring = await dropFromKeyring(name, { ...secrets, expected });
  const fromFile = store.removeProfile(name);
  if (!fromFile && !fromKeyring) {
    const names = store.profileNames();
    throw new UsageError(
      `no profile ${JSON.stringify(name)} in ${store.path}${names.length > 0 ? ` (profiles: ${names.join(', ')})` : ' (no profiles stored)'}`,
    );
  }
  return { profile: name, path: store.path, from_file: fromFile, from_keyring: fromKeyring };
}
