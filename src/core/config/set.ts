import type { ConfigStore } from '../../config/store.js';
import { normalizeBaseUrl } from '../../api/base-url.js';
import { UsageError } from '../../errors.js';
import { chooseStateUrl, redactStateUrl, withPassword } from '../../state/pg/url.js';
import { timingFor } from '../timing.js';

/** The settings `payouts config set` stores in a profile, as the user names them. */
export const PROFILE_SETTINGS = ['base_url', 'quiet_time', 'state_url'] as const;

/** What `config set` stored. */
export interface SetResult {
  profile: string;
  key: string;
  /** Null when the setting was removed (value "default"); a state URL with its password as ***. */
  value: number | string | null;
  path: string;
}

/** What `config set` did: the document, and whether the file changed. */
export interface SetOutcome {
  set: SetResult;
  /** False when the value was already so (a removal of what no one set writes nothing). */
  changed: boolean;
}

/** Seconds of a quiet time: a number from 1 to 3600, or "default" (undefined). */
function quietSeconds(text: string): number | undefined {
  const t = text.trim();
  if (t === 'default') return undefined;
  const seconds = Number(t);
  if (!/^\d+(\.\d+)?$/.test(t) || seconds < 1 || seconds > 3600) {
    throw new UsageError(
      `quiet_time ${JSON.stringify(text)}: give the seconds to wait before "Payout not found" counts, from 1 to 3600, or "default" (the deadline plus a sixth of PAYOUTS_TIMEOUT); a shorter value than the default is not used`,
    );
  }
  return seconds;
}

/** What `config set` may ask a person at a terminal. */
export interface SetIo {
  /** Asks without echo; absent when no one is at a terminal. */
  askPassword?: (question: string) => Promise<string>;
}

/** Stores one setting of a profile (`payouts config set KEY VALUE`). */
export async function setProfileSetting(
  store: ConfigStore,
  profile: string,
  change: { key: string; value: string },
  io: SetIo = {},
): Promise<SetOutcome> {
  if (change.key === 'state_url') return setStateUrl(store, profile, change.value, io);
  if (change.key === 'base_url') return setBaseUrl(store, profile, change.value);
  if (change.key !== 'quiet_time') {
    throw new UsageError(
      `config set ${JSON.stringify(change.key)}: unknown setting; the settings are ${PROFILE_SETTINGS.join(', ')} (credentials: payouts config set-credentials)`,
    );
  }
  const seconds = quietSeconds(change.value);
  const changed = store.saveProfile(profile, { quietTime: seconds });
  return { set: { profile, key: change.key, value: seconds ?? null, path: store.path }, changed };
}

/**
 * Stores a profile's shared history (`config set state_url postgres://…`, "default" or ""
 * removes it); what is shown of it has its password as ***. The URL comes from a command
 * line, so it may not carry a password: on a terminal it is asked for, without echo, and
 * kept in the 0600 config file (empty: none, PGPASSWORD or ~/.pgpass giving it at each use).
 */
async function setStateUrl(
  store: ConfigStore,
  profile: string,
  value: string,
  io: SetIo,
): Promise<SetOutcome> {
  const text = value.trim();
  let url =
    text === '' || text === 'default'
      ? undefined
      : chooseStateUrl({ value: text, from: 'state_url', commandLine: true });
  if (url !== undefined && io.askPassword) {
    const answer = await io.askPassword(
      `Password for ${redactStateUrl(url)} (not shown; empty: none kept, PGPASSWORD or ~/.pgpass give it): `,
    );
    url = withPassword(url, answer);
  }
  const changed = store.saveProfile(profile, { stateUrl: url });
  const shown = url === undefined ? null : redactStateUrl(url);
  return { set: { profile, key: 'state_url', value: shown, path: store.path }, changed };
}

/**
 * Stores a profile's base URL without credentials (`config set base_url URL`): what a person
 * who only prepares or approves runs needs ("default" or "" removes it).
 */
function setBaseUrl(store: ConfigStore, profile: string, value: string): SetOutcome {
  const text = value.trim();
  const url = text === '' || text === 'default' ? undefined : normalizeBaseUrl(text, 'base_url');
  const changed = store.saveProfile(profile, { baseUrl: url });
  return { set: { profile, key: 'base_url', value: url ?? null, path: store.path }, changed };
}

/**
 * What to tell a person who stored a quiet time shorter than the one PAYOUTS_TIMEOUT
 * (`timeout`, its text) gives: it is kept, but never shortens the wait. Undefined otherwise.
 */
export function shortQuietTime(set: SetResult, timeout: string | undefined): string | undefined {
  if (set.key !== 'quiet_time' || typeof set.value !== 'number') return undefined;
  const given = timingFor(timeout).quietMs / 1000;
  if (set.value >= given) return undefined;
  const from = timeout?.trim() ? `${Number(timeout.trim())} s` : '30 s, the default';
  return `quiet_time ${set.value} s is shorter than the ${given} s that PAYOUTS_TIMEOUT (${from}) gives: a send waits ${given} s`;
}
