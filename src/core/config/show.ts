import { keyringEntry } from '../../config/keyring.js';
import type { Settings, Source } from '../../config/settings.js';
import { redactStateUrl } from '../../state/pg/url.js';

/** The --json document of `config show`. The secret appears only masked (Secret.masked). */
export interface SettingsView {
  profile: { value: string; source: Source };
  client_id: { value: string; source: Source } | null;
  client_secret: { masked: string; source: Source } | null;
  /** Why the profile's Client-Secret, in the system keyring, could not be read (null: it could, or there is none). */
  client_secret_problem: string | null;
  base_url: { value: string; source: Source } | null;
  /** The shared history, its password shown as ***. */
  state_url: { value: string; source: Source } | null;
  config_file: string;
  /** The local history, used when no state URL is in force. */
  state_db: string;
  stored_profiles: string[];
}

/** Describes the effective settings and where each came from. */
export function describeSettings(
  settings: Settings,
  configFile: string,
  storedProfiles: string[],
  stateDb: string,
): SettingsView {
  return {
    profile: { value: settings.profile.value, source: settings.profile.source },
    client_id: settings.clientId
      ? { value: settings.clientId.value, source: settings.clientId.source }
      : null,
    client_secret: settings.clientSecret
      ? { masked: settings.clientSecret.value.masked(), source: settings.clientSecret.source }
      : null,
    client_secret_problem: settings.secretProblem ?? null,
    base_url: settings.baseUrl
      ? { value: settings.baseUrl.value, source: settings.baseUrl.source }
      : null,
    state_url: settings.stateUrl
      ? { value: redactStateUrl(settings.stateUrl.value), source: settings.stateUrl.source }
      : null,
    config_file: configFile,
    state_db: stateDb,
    stored_profiles: storedProfiles,
  };
}

/** The human form of `config show`: one setting per line, with its origin. */
export function renderSettings(view: SettingsView): string {
  const from = (s: Source) => `(${s === 'default' ? 'default' : `from ${s}`})`;
  const secret = view.client_secret
    ? `${view.client_secret.masked} ${
        view.client_secret.source === 'keyring'
          ? `(from the system keyring, ${keyringEntry(view.profile.value)})`
          : from(view.client_secret.source)
      }`
    : view.client_secret_problem !== null
      ? `(not readable: ${view.client_secret_problem})`
      : '(not set)';
  const rows: Array<[string, string]> = [
    [
      'Profile',
      view.profile.source === 'default'
        ? `${view.profile.value} (used when neither --profile nor PAYOUTS_PROFILE names one)`
        : `${view.profile.value} ${from(view.profile.source)}`,
    ],
    [
      'Client-Id',
      view.client_id ? `${view.client_id.value} ${from(view.client_id.source)}` : '(not set)',
    ],
    ['Client-Secret', secret],
    [
      'Base URL',
      view.base_url ? `${view.base_url.value} ${from(view.base_url.source)}` : '(not set)',
    ],
    [
      'State',
      view.state_url
        ? `${view.state_url.value} ${from(view.state_url.source)}`
        : `${view.state_db} (this machine's history: no --state-url or PAYOUTS_STATE_URL)`,
    ],
    ['Config file', view.config_file],
    [
      'Profiles',
      view.stored_profiles.length > 0 ? view.stored_profiles.join(', ') : '(none stored)',
    ],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join('\n');
}
