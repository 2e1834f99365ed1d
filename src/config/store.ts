import { chmodSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import Conf from 'conf';
import { UsageError } from '../errors.js';
import { jsonErrorOffset, lineAndColumn } from './json-error.js';

/**
 * One stored profile. The secret is stored here, in a file only the user can read, unless
 * `secretIn` says it is in the system keyring (then the file holds no secret).
 */
export interface StoredProfile {
  clientId?: string;
  clientSecret?: string;
  secretIn?: 'keyring';
  baseUrl?: string;
  /** A shared history, postgres://…; its password is kept as the Client-Secret is, in this 0600 file. */
  stateUrl?: string;
  /** Seconds before "Payout not found" counts, for a slow service (`config set quiet_time`). */
  quietTime?: number;
}

interface ConfigShape {
  profiles: Record<string, StoredProfile>;
}

/**
 * The error for a config file that is not valid JSON: the file and the line, never its text
 * (conf's SyntaxError quotes the file, secret included).
 */
export function unreadableConfigError(path: string): UsageError {
  let where = '';
  try {
    const text = readFileSync(path, 'utf8');
    const offset = jsonErrorOffset(text);
    if (offset !== undefined) {
      const { line, column } = lineAndColumn(text, offset);
      where = ` (line ${line}, column ${column})`;
    }
  } catch {
    // Unreadable now: the message names the file without a line.
  }
  return new UsageError(
    `the config file ${path} is not valid JSON${where}: correct it in an editor, or move it away and store the credentials again with \`payouts config set-credentials\``,
  );
}

/** Warnings about a config file or folder that other users can read or write. */
function permissionWarnings(dir: string, file: string): string[] {
  const warnings: string[] = [];
  const open = (path: string): number | undefined => {
    try {
      const mode = statSync(path).mode & 0o777;
      return (mode & 0o077) === 0 ? undefined : mode;
    } catch {
      return undefined;
    }
  };
  const octal = (mode: number) => mode.toString(8).padStart(4, '0');
  const folderMode = open(dir);
  if (folderMode !== undefined) {
    warnings.push(
      `the config folder ${dir} is open to other users (mode ${octal(folderMode)}): run \`chmod 700 ${dir}\``,
    );
  }
  const fileMode = open(file);
  if (fileMode !== undefined) {
    warnings.push(
      `the config file ${file} holds credentials and is open to other users (mode ${octal(fileMode)}): run \`chmod 600 ${file}\``,
    );
  }
  return warnings;
}

/** The config file: profiles kept by conf in a 0600 file inside a 0700 folder. */
export class ConfigStore {
  private readonly conf: Conf<ConfigShape>;
  /** Path of the config file. */
  readonly path: string;
  /** Found when the store was opened: the file or folder is open to other users. */
  readonly warnings: string[];

  constructor(dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    try {
      chmodSync(dir, 0o700);
    } catch {
      // Not ours to change: permissionWarnings says so.
    }
    this.path = resolve(dir, 'config.json');
    this.warnings = permissionWarnings(dir, this.path);
    this.conf = this.reading(
      () =>
        new Conf<ConfigShape>({
          cwd: dir,
          configName: 'config',
          configFileMode: 0o600,
          defaults: { profiles: {} },
          clearInvalidConfig: false,
        }),
    );
  }

  /** Runs a conf call, which reads the file each time, turning a JSON syntax error into ours. */
  private reading<T>(read: () => T): T {
    try {
      return read();
    } catch (error) {
      if (error instanceof SyntaxError) throw unreadableConfigError(this.path);
      throw error;
    }
  }

  /** The stored profiles. */
  private profiles(): Record<string, StoredProfile> {
    return this.reading(() => this.conf.get('profiles'));
  }

  /** A stored profile, or undefined. */
  profile(name: string): StoredProfile | undefined {
    const profiles = this.profiles();
    // Own keys only: a name such as "constructor" must not find Object.prototype's members.
    return Object.hasOwn(profiles, name) ? profiles[name] : undefined;
  }

  /** Names of all stored profiles. */
  profileNames(): string[] {
    return Object.keys(this.profiles()).sort();
  }

  /** Merges values into a profile, creating it when needed; a key set to undefined is removed. */
  saveProfile(name: string, values: StoredProfile): void {
    const profiles = { ...this.profiles() };
    const merged: Record<string, unknown> = { ...profiles[name], ...values };
    for (const key of Object.keys(merged)) if (merged[key] === undefined) delete merged[key];
    profiles[name] = merged as StoredProfile;
    this.reading(() => this.conf.set('profiles', profiles));
  }

  /** Deletes a profile; returns whether it existed. */
  removeProfile(name: string): boolean {
    const profiles = { ...this.profiles() };
    if (!Object.hasOwn(profiles, name)) return false;
    delete profiles[name];
    this.reading(() => this.conf.set('profiles', profiles));
    return true;
  }
}
