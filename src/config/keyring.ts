import type { Env } from '../paths.js';

/** The keyring service name under which each profile's Client-Secret is kept. */
export const KEYRING_SERVICE = 'payouts';

/** Names a profile's keyring entry in messages: `service "payouts", account "NAME"`. */
export function keyringEntry(profile: string): string {
  return `service "${KEYRING_SERVICE}", account "${profile}"`;
}

/** Client-Secrets kept apart from the config file, one entry per profile. */
export interface SecretStore {
  /** The profile's secret, or undefined when there is no entry. */
  get(profile: string): Promise<string | undefined>;
  set(profile: string, secret: string): Promise<void>;
  /** Deletes the profile's entry; returns whether there was one. */
  delete(profile: string): Promise<boolean>;
}

/** Opens the secret store; rejects with KeyringError when it cannot be reached. */
export type SecretStoreFactory = () => Promise<SecretStore>;

/** The system keyring cannot be reached or refused a request; `reason` says why. */
export class KeyringError extends Error {
  override name = 'KeyringError';
  constructor(readonly reason: string) {
    super(`the system keyring cannot be reached: ${reason}`);
  }
}

/** The first line of an error's message: the library's messages nest their causes. */
function reasonOf(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split('\n')[0]?.trim() || 'unknown error';
}

/** Runs a keyring call, turning whatever the library throws into a KeyringError. */
async function calling<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw new KeyringError(reasonOf(error));
  }
}

type Keyring = typeof import('@napi-rs/keyring');

/** The platform's keyring through @napi-rs/keyring: Keychain, Credential Manager, Secret Service. */
class SystemKeyring implements SecretStore {
  constructor(private readonly lib: Keyring) {}

  private entry(profile: string) {
    // On Linux only the Secret Service keeps a secret across logins: the library's fallback,
    // the kernel keyring, forgets it at logout or reboot. Other platforms ignore the option.
    return new this.lib.AsyncEntry(KEYRING_SERVICE, profile, {
      linux: { store: 'secret-service' },
    });
  }

  get(profile: string): Promise<string | undefined> {
    return calling(async () => (await this.entry(profile).getPassword()) ?? undefined);
  }

  set(profile: string, secret: string): Promise<void> {
    return calling(() => this.entry(profile).setPassword(secret));
  }

  delete(profile: string): Promise<boolean> {
    return calling(() => this.entry(profile).deletePassword());
  }
}

/**
 * Opens the system keyring; rejects with KeyringError when it cannot be used. The native
 * module is imported here, on first use, so commands that need no secret never load it.
 */
export async function openSystemKeyring(
  env: Env,
  platform: NodeJS.Platform = process.platform,
): Promise<SecretStore> {
  // The library finds the session bus through the process environment; checking the one the
  // CLI was given gives a clear reason, and keeps runs with a test environment off the real bus.
  if (
    platform !== 'win32' &&
    platform !== 'darwin' &&
    !env.DBUS_SESSION_BUS_ADDRESS &&
    !env.XDG_RUNTIME_DIR
  ) {
    throw new KeyringError(
      'no desktop session here to reach a keyring through (neither DBUS_SESSION_BUS_ADDRESS nor XDG_RUNTIME_DIR is set), as over SSH or in a container',
    );
  }
  const lib = await calling(() => import('@napi-rs/keyring'));
  return new SystemKeyring(lib);
}
