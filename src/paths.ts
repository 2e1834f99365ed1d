import { posix, win32 } from 'node:path';

/** The environment variables the CLI reads, passed in by the entry point. */
export type Env = Readonly<Record<string, string | undefined>>;

/**
 * The platform the folders are for, and the operating system's home folder. Passed in so the
 * rules of every platform can be tested on any one; the running process's when absent.
 */
export interface Host {
  platform: NodeJS.Platform;
  /** os.homedir(): called only when the environment does not name the home folder. */
  homedir: () => string;
}

/** The running process's platform and home folder. */
function thisHost(): Host {
  return {
    platform: process.platform,
    // node:os is fetched only when asked: loading it cost every command start-up time.
    homedir: () => process.getBuiltinModule('node:os').homedir(),
  };
}

/**
 * Folder of the config file (and of a secret kept outside the keyring): %APPDATA%\payouts on
 * Windows; elsewhere, macOS included, $XDG_CONFIG_HOME/payouts, else ~/.config/payouts.
 */
export function configDir(env: Env, host: Host = thisHost()): string {
  if (host.platform === 'win32')
    return windowsDir(env.APPDATA, ['AppData', 'Roaming'], { env, host });
  return xdgDir(env.XDG_CONFIG_HOME, ['.config'], { env, host });
}

/**
 * Folder of the state database, locks and sandbox state: %LOCALAPPDATA%\payouts on Windows;
 * elsewhere $XDG_STATE_HOME/payouts, else ~/.local/state/payouts.
 */
export function stateDir(env: Env, host: Host = thisHost()): string {
  if (host.platform === 'win32')
    return windowsDir(env.LOCALAPPDATA, ['AppData', 'Local'], { env, host });
  return xdgDir(env.XDG_STATE_HOME, ['.local', 'state'], { env, host });
}

/** Where a folder lives and how to find the home folder. */
interface Place {
  env: Env;
  host: Host;
}

/** An XDG base folder: the variable when absolute (the XDG spec ignores a relative one), else under home. */
function xdgDir(value: string | undefined, underHome: string[], place: Place): string {
  const base = value && posix.isAbsolute(value) ? value : posix.join(homeDir(place), ...underHome);
  return posix.join(base, 'payouts');
}

/**
 * A Windows known folder: the variable when absolute, else under the profile folder. XDG_*
 * are not read on Windows, so a shell that sets them (Git Bash, MSYS2) finds the same state as
 * PowerShell and cmd, and one user never has two histories.
 */
function windowsDir(value: string | undefined, underHome: string[], place: Place): string {
  const base = value && win32.isAbsolute(value) ? value : win32.join(homeDir(place), ...underHome);
  return win32.join(base, 'payouts');
}

/**
 * The home folder as os.homedir() answers it: USERPROFILE on Windows, HOME elsewhere, else
 * the operating system's record. HOME is not read on Windows, where a Unix-like shell may set
 * it to another folder than the profile that every other program uses.
 */
function homeDir({ env, host }: Place): string {
  const windows = host.platform === 'win32';
  const value = windows ? env.USERPROFILE : env.HOME;
  const absolute = windows ? win32.isAbsolute : posix.isAbsolute;
  return value && absolute(value) ? value : host.homedir();
}
