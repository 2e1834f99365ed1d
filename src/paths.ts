import { join } from 'node:path';

/** The environment variables the CLI reads, passed in by the entry point. */
export type Env = Readonly<Record<string, string | undefined>>;

/** Folder of the config file: $XDG_CONFIG_HOME/payouts, else ~/.config/payouts. */
export function configDir(env: Env): string {
  return join(env.XDG_CONFIG_HOME || join(homeDir(env), '.config'), 'payouts');
}

/** Folder of journals, locks and sandbox state: $XDG_STATE_HOME/payouts, else ~/.local/state/payouts. */
export function stateDir(env: Env): string {
  return join(env.XDG_STATE_HOME || join(homeDir(env), '.local', 'state'), 'payouts');
}

/** The home folder: $HOME, else the operating system's answer. */
function homeDir(env: Env): string {
  // node:os is fetched only without HOME: loading it cost every command start-up time.
  return env.HOME || process.getBuiltinModule('node:os').homedir();
}
