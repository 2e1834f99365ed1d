import type { Readable } from 'node:stream';
import { text as streamText } from 'node:stream/consumers';
import { normalizeBaseUrl } from '../../api/base-url.js';
import { checkCredential, Secret } from '../../api/secret.js';
import { KeyringError, keyringEntry, type SecretStoreFactory } from '../../config/keyring.js';
import type { ConfigStore, StoredProfile } from '../../config/store.js';
import { UsageError } from '../../errors.js';
import { shellWord } from '../../output/display.js';
import type { Output } from '../../output/output.js';

/** What `config set-credentials` was given on the command line. */
export interface CredentialFlags {
  clientId?: string;
  /** --client-secret-stdin: the secret is the whole of standard input. */
  secretFromStdin?: boolean;
  /** The global --base-url, not yet checked. */
  baseUrl?: string;
}

/** Credentials ready to be stored. */
export interface NewCredentials {
  clientId: string;
  clientSecret: Secret;
  /** Normalised; undefined keeps the profile's stored base URL. */
  baseUrl?: string;
}

/** How to pass the credentials without a terminal, for the usage error. */
export const NON_INTERACTIVE_HINT =
  'without a terminal, pass --client-id ID and the secret on standard input with --client-secret-stdin, e.g.\n' +
  '  printf \'%s\' "$SECRET" | payouts config set-credentials --client-id ID --client-secret-stdin [--base-url https://...]\n' +
  '(there is no option that takes the secret itself: command lines are visible to other users and kept in shell history)';

/** Removes one trailing newline (LF or CRLF), as `echo` and editors add. */
export function trimOneNewline(text: string): string {
  return text.replace(/\r?\n$/, '');
}

/** Checks a Client-Id, less surrounding spaces, before it is stored: it goes into an HTTP header. */
export function checkClientId(raw: string, from: string): string {
  const id = raw.trim();
  checkCredential({ name: 'Client-Id', value: id, from, fix: 'nothing was stored' });
  return id;
}

/** Checks a Client-Secret before it is stored, without ever putting it in a message. */
export function checkClientSecret(raw: string, from: string): Secret {
  checkCredential({ name: 'Client-Secret', value: raw, from, fix: 'nothing was stored' });
  return new Secret(raw);
}

/** Asks on the terminal; input closed before an answer (Ctrl-D) is a usage error, not a crash. */
async function ask(output: Output, question: string, hidden = false): Promise<string> {
  try {
    return await output.ask(question, hidden);
  } catch {
    throw new UsageError('no answer given: nothing was stored');
  }
}

/** Where collectCredentials reads from. */
export interface CredentialPrompt {
  output: Output;
  stdin: Readable;
  /** The profile as stored now, to offer its values as defaults. */
  existing?: StoredProfile;
}

/**
 * Gathers new credentials from the flags, standard input and, on a terminal, prompts (the
 * secret hidden). The base URL is checked before anything is asked, so a refused URL wastes
 * no typing. Without a terminal and without the flags, throws a usage error naming them.
 */
export async function collectCredentials(
  flags: CredentialFlags,
  io: CredentialPrompt,
): Promise<NewCredentials> {
  const { output, existing } = io;
  let baseUrl = flags.baseUrl === undefined ? undefined : normalizeBaseUrl(flags.baseUrl);
  const canAsk = output.interactive && !flags.secretFromStdin;
  if (!canAsk && (flags.clientId === undefined || !flags.secretFromStdin)) {
    const missing = [
      flags.clientId === undefined && '--client-id',
      !flags.secretFromStdin && '--client-secret-stdin',
    ].filter(Boolean);
    throw new UsageError(`missing ${missing.join(' and ')}: ${NON_INTERACTIVE_HINT}`);
  }
  let clientId: string;
  if (flags.clientId !== undefined) {
    clientId = checkClientId(flags.clientId, '--client-id');
  } else {
    const hint = existing?.clientId ? ` [${existing.clientId}]` : '';
    const answer = (await ask(output, `Client-Id${hint}: `)).trim();
    clientId = checkClientId(
      answer === '' && existing?.clientId ? existing.clientId : answer,
      'the prompt',
    );
  }
  // --client-secret-stdin typed at a terminal would echo the secret: ask without echo instead.
  const stdinIsTerminal = Boolean((io.stdin as { isTTY?: boolean }).isTTY);
  const clientSecret =
    flags.secretFromStdin && !stdinIsTerminal
      ? checkClientSecret(trimOneNewline(await streamText(io.stdin)), 'standard input')
      : checkClientSecret(
          (await ask(output, 'Client-Secret (not shown): ', true)).trim(),
          'the prompt',
        );
  if (baseUrl === undefined && !existing?.baseUrl && canAsk) {
    const answer = (await ask(output, 'Base URL (https://..., empty to skip): ')).trim();
    if (answer !== '') baseUrl = normalizeBaseUrl(answer, 'the base URL');
  }
  return { clientId, clientSecret, baseUrl };
}

/** What was stored, for the confirmation message: never the secret. */
export interface SavedCredentials {
  profile: string;
  path: string;
  client_id: string;
  base_url: string | null;
  /** Where the Client-Secret went: the system keyring, or the config file at `path`. */
  secret_in: 'keyring' | 'file';
  /** Why the file holds it: --no-keyring, or why the keyring could not be used. */
  secret_note: string | null;
}

/** Where saveCredentials may put the Client-Secret. */
export interface SecretTarget {
  /** False with --no-keyring: the file, without trying the keyring. */
  useKeyring: boolean;
  /** Opens the keyring; rejects with KeyringError when it cannot be reached. */
  open: SecretStoreFactory;
}

/** Puts the secret in the keyring; returns why it is not there, or undefined when it is. */
async function intoKeyring(
  open: SecretStoreFactory,
  profile: string,
  secret: Secret,
): Promise<string | undefined> {
  try {
    await (await open()).set(profile, secret.reveal());
    return undefined;
  } catch (error) {
    if (!(error instanceof KeyringError)) throw error;
    return `no system keyring can be used here: ${error.reason}`;
  }
}

/**
 * Stores credentials in a profile (merging with its base URL) and says where: the
 * Client-Secret in the system keyring when it can be reached, else in the 0600 config file.
 */
export async function saveCredentials(
  store: ConfigStore,
  profile: string,
  creds: NewCredentials,
  target: SecretTarget,
): Promise<{ saved: SavedCredentials; warnings: string[] }> {
  const baseUrl = creds.baseUrl !== undefined ? { baseUrl: creds.baseUrl } : {};
  const fileNote = target.useKeyring
    ? await intoKeyring(target.open, profile, creds.clientSecret)
    : '--no-keyring';
  const warnings: string[] = [];
  if (fileNote === undefined) {
    const keyring = { clientSecret: undefined, secretIn: 'keyring' } as const;
    store.saveProfile(profile, { clientId: creds.clientId, ...keyring, ...baseUrl });
  } else {
    const stale = await dropKeyringSecret(store.profile(profile), profile, target.open);
    if (stale !== undefined) warnings.push(stale);
    const file = { clientSecret: creds.clientSecret.reveal(), secretIn: undefined };
    store.saveProfile(profile, { clientId: creds.clientId, ...file, ...baseUrl });
  }
  const saved: SavedCredentials = {
    profile,
    path: store.path,
    client_id: creds.clientId,
    base_url: store.profile(profile)?.baseUrl ?? null,
    secret_in: fileNote === undefined ? 'keyring' : 'file',
    secret_note: fileNote ?? null,
  };
  return { saved, warnings };
}

/**
 * Deletes the keyring entry of a profile that said its secret was there, now that the file
 * holds it; returns a warning when that entry may remain.
 */
async function dropKeyringSecret(
  existing: StoredProfile | undefined,
  profile: string,
  open: SecretStoreFactory,
): Promise<string | undefined> {
  if (existing?.secretIn !== 'keyring') return undefined;
  try {
    await (await open()).delete(profile);
    return undefined;
  } catch (error) {
    if (!(error instanceof KeyringError)) throw error;
    return `the previous Client-Secret of profile "${profile}" may remain in the system keyring (${keyringEntry(profile)}), which cannot be reached: ${error.reason}`;
  }
}

/** ` --profile NAME` for a next step, or nothing for the default profile. */
function profileFlag(profile: string): string {
  return profile === 'default' ? '' : ` --profile ${shellWord(profile)}`;
}

/** Where the Client-Secret went, and (from the file) how to keep it in a keyring instead. */
export function secretStoredLine(saved: SavedCredentials): string {
  return saved.secret_in === 'keyring'
    ? `Client-Secret stored in the system keyring (${keyringEntry(saved.profile)})`
    : saved.secret_note === '--no-keyring'
      ? `Client-Secret stored in ${saved.path} (--no-keyring), readable by you only`
      : `Client-Secret stored in ${saved.path} (readable by you only): ${saved.secret_note}\n` +
        `To keep it in a keyring instead, run \`payouts${profileFlag(saved.profile)} config set-credentials\` again where one runs (a desktop login with GNOME Keyring, KWallet or KeePassXC; macOS; Windows)`;
}
