import { chmodSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { CredentialsError, UsageError } from '../errors.js';
import { readTrustedFile, replaceFile, trustProblem, UnsafeFileError } from '../files.js';
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
 * (JSON.parse's SyntaxError may quote the file, secret included).
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

/**
 * Warnings about a config file or folder that other users can read or write. None on Windows,
 * where chmod sets only the read-only flag and the folder's access list decides who reads it.
 */
export function permissionWarnings(
  dir: string,
  file: string,
  platform: NodeJS.Platform = process.platform,
): string[] {
  const warnings: string[] = [];
  if (platform === 'win32') return warnings;
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

/** Why a config folder or file is not trusted, and the fix, as CredentialsError (exit 3). */
function untrusted(what: string, path: string, problem: string, fix: string): CredentialsError {
  return new CredentialsError(
    `the config ${what} ${path} ${problem}: payouts takes credentials and the service's URL only from a ${what} no one else can change: ${fix}`,
  );
}

/**
 * Refuses a config folder that another user owns (a shared XDG_CONFIG_HOME) or can change:
 * a config.json planted there could send the secret to any service. Root's are trusted.
 */
function checkConfigFolder(dir: string): void {
  const problem = trustProblem(statSync(dir));
  if (!problem) return;
  throw untrusted(
    'folder',
    dir,
    problem,
    problem.startsWith('belongs to')
      ? `move it aside (mv ${dir} ${dir}.not-mine) and store your own with \`payouts config set-credentials\`, or set XDG_CONFIG_HOME to a folder of yours`
      : `run \`chmod 700 ${dir}\`, check what it holds with \`payouts config show\`, then run again`,
  );
}

/** The config file's text, read only from a regular file no one else can change; undefined when none. */
function readConfigFile(path: string): string | undefined {
  try {
    return readTrustedFile(path);
  } catch (err) {
    if (!(err instanceof UnsafeFileError)) throw err;
    const { problem } = err;
    const fix = problem.startsWith('can be changed')
      ? `run \`chmod 600 ${path}\`, check what it holds with \`payouts config show\`, then run again`
      : `if it is not yours, remove it (rm ${path}) and store your credentials again with \`payouts config set-credentials\`; if it is, put the file itself there`;
    throw untrusted('file', path, problem, fix);
  }
}

/**
 * The config file: profiles in a 0600 JSON file inside a 0700 folder, read on each call and
 * replaced atomically. Not `conf`: it loads `when-exit`, which takes over SIGINT and SIGTERM
 * and re-raises them, so a run with a stored profile could not be stopped cleanly.
 */
export class ConfigStore {
  /** Path of the config file. */
  readonly path: string;
  /** Found when the store was opened: the file or folder is open to other users. */
  readonly warnings: string[];

  constructor(dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    checkConfigFolder(dir);
    try {
      chmodSync(dir, 0o700);
    } catch {
      // Not ours to change: permissionWarnings says so.
    }
    this.path = resolve(dir, 'config.json');
    this.warnings = permissionWarnings(dir, this.path);
    this.profiles();
  }

  /** The stored profiles; none when the file does not exist yet. */
  private profiles(): Record<string, StoredProfile> {
    const text = readConfigFile(this.path);
    if (text === undefined) return {};
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw unreadableConfigError(this.path);
    }
    const profiles = (parsed as Partial<ConfigShape> | null)?.profiles;
    return typeof profiles === 'object' && profiles !== null ? { ...profiles } : {};
  }

  /** Writes the whole file: a new file beside it, synced, renamed over the old one. */
  private write(profiles: Record<string, StoredProfile>): void {
    const shape: ConfigShape = { profiles };
    replaceFile(this.path, (append) => append(`${JSON.stringify(shape, undefined, '\t')}\n`));
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

  /**
   * Merges values into a profile, creating it when needed; a key set to undefined is removed.
   * Returns whether anything changed: removing a key nobody set writes nothing, so no empty
   * profile is made.
   */
  saveProfile(name: string, values: StoredProfile): boolean {
    const profiles = this.profiles();
    const before = Object.hasOwn(profiles, name) ? profiles[name] : undefined;
    const merged: Record<string, unknown> = { ...before, ...values };
    for (const key of Object.keys(merged)) if (merged[key] === undefined) delete merged[key];
    if (before !== undefined && JSON.stringify(merged) === JSON.stringify(before)) return false;
    if (before === undefined && Object.keys(merged).length === 0) return false;
    profiles[name] = merged as StoredProfile;
    this.write(profiles);
    return true;
  }

  /** Deletes a profile; returns whether it existed. */
  removeProfile(name: string): boolean {
    const profiles = this.profiles();
    if (!Object.hasOwn(profiles, name)) return false;
    delete profiles[name];
    this.write(profiles);
    return true;
  }
}
