import { homedir } from 'node:os';
import { join } from 'node:path';

/** The environment variables the CLI reads, passed in by the entry point. */
export type Env = Readonly<Record<string, string | undefined>>;

/** Folder of the config file: $XDG_CONFIG_HOME/payouts, else ~/.config/payouts. */
export function configDir(env: Env): string {
  return join(env.XDG_CONFIG_HOME || join(env.HOME || homedir(), '.config'), 'payouts');
}

/** Folder of journals, locks and sandbox state: $XDG_STATE_HOME/payouts, else ~/.local/state/payouts. */
export function stateDir(env: Env): string {
  return join(env.XDG_STATE_HOME || join(env.HOME || homedir(), '.local', 'state'), 'payouts');
}
