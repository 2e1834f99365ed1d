import { chmodSync, mkdirSync } from 'node:fs';
import Conf from 'conf';

/** One stored profile. The secret is stored here, in a file only the user can read. */
export interface StoredProfile {
  clientId?: string;
  clientSecret?: string;
  baseUrl?: string;
}

interface ConfigShape {
  profiles: Record<string, StoredProfile>;
}

/** The config file: profiles kept by conf in a 0600 file inside a 0700 folder. */
export class ConfigStore {
  private readonly conf: Conf<ConfigShape>;

  constructor(dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    chmodSync(dir, 0o700);
    this.conf = new Conf<ConfigShape>({
      cwd: dir,
      configName: 'config',
      configFileMode: 0o600,
      defaults: { profiles: {} },
      clearInvalidConfig: false,
    });
  }

  /** Path of the config file. */
  get path(): string {
    return this.conf.path;
  }

  /** A stored profile, or undefined. */
  profile(name: string): StoredProfile | undefined {
    const profiles = this.conf.get('profiles');
    // Own keys only: a name such as "constructor" must not find Object.prototype's members.
    return Object.hasOwn(profiles, name) ? profiles[name] : undefined;
  }

  /** Names of all stored profiles. */
  profileNames(): string[] {
    return Object.keys(this.conf.get('profiles')).sort();
  }

  /** Merges values into a profile, creating it when needed. */
  saveProfile(name: string, values: StoredProfile): void {
    const profiles = { ...this.conf.get('profiles') };
    profiles[name] = { ...profiles[name], ...values };
    this.conf.set('profiles', profiles);
  }

  /** Deletes a profile; returns whether it existed. */
  removeProfile(name: string): boolean {
    const profiles = { ...this.conf.get('profiles') };
    if (!Object.hasOwn(profiles, name)) return false;
    delete profiles[name];
    this.conf.set('profiles', profiles);
    return true;
  }
}
