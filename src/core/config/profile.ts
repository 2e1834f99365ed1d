import type { Sourced } from '../../config/settings.js';
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
}

/** Deletes a stored profile; a profile that does not exist is a usage error naming those that do. */
export function removeProfile(store: ConfigStore, name: string): RemovedProfile {
  if (!store.removeProfile(name)) {
    const names = store.profileNames();
    throw new UsageError(
      `no profile ${JSON.stringify(name)} in ${store.path}${names.length > 0 ? ` (profiles: ${names.join(', ')})` : ' (no profiles stored)'}`,
    );
  }
  return { profile: name, path: store.path };
}
