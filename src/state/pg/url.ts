/** A shared history's address: what may be shown of it, and what it is. */
import { isLoopbackHost } from '../../api/base-url.js';
import { UsageError } from '../../errors.js';

/** The form every refusal of a state URL shows. */
const FORM =
  'postgres://USER:PASSWORD@HOST:5432/DATABASE?sslmode=verify-full (sslmode=disable written out for no TLS; write @ : / ? # [ ] in the password as %40 %3A %2F %3F %23 %5B %5D)';

/** The sslmode values node-postgres acts on; any other would be taken as TLS without a word. */
const SSL_MODES = ['disable', 'prefer', 'require', 'verify-ca', 'verify-full', 'no-verify'];

/** Whether a state URL names a PostgreSQL database. */
export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//i.test(url.trim());
}

/**
 * A state URL as it may appear in any output: its password replaced by "***", as the
 * Client-Secret is never shown; a URL that does not parse is not shown at all.
 */
export function redactStateUrl(url: string): string {
  try {
    const u = new URL(url.trim());
    if (u.password) u.password = '***';
    for (const key of ['password', 'sslpassword']) {
      if (u.searchParams.has(key)) u.searchParams.set(key, '***');
    }
    return u.toString();
  } catch {
    return maskUnparsed(url.trim());
  }
}

/** A state URL with its password taken out, for a command to copy (redacted when it does not parse). */
export function withoutPassword(url: string): string {
  try {
    const u = new URL(url.trim());
    u.password = '';
    // Only when there: writing the parameters again would change how the others are encoded.
    for (const key of ['password', 'sslpassword']) {
      if (u.searchParams.has(key)) u.searchParams.delete(key);
    }
    return u.toString();
  } catch {
    return maskUnparsed(url.trim());
  }
}

/** A shared history in a summary: the user, host and database, without password or parameters. */
export function historyLabel(url: string): string {
  try {
    const u = new URL(url.trim());
    const user = u.username ? `${u.username}@` : '';
    return `shared (${u.protocol}//${user}${u.host}${u.pathname})`;
  } catch {
    return `shared (${maskUnparsed(url.trim())})`;
  }
}

/**
 * A text that may hold URLs (a command line, a lock row): each word holding `://` with what
 * may be its password masked. A quoted word ('…', as shellWord writes one with a space) is
 * one word, so a password with a space in it is masked whole.
 */
export function redactPasswords(text: string): string {
  return text.replace(/'[^']*'|[^\s']+/g, redactWord);
}

/** One word of a command line (a URL, an option's value) with what may be a password masked. */
export function redactWord(word: string): string {
  return word.includes('://') || /password=/i.test(word) ? maskUnparsed(word) : word;
}

/**
 * A URL that does not parse, with what may be its password masked: everything between the
 * user's colon and the last @, and any password= parameter, so no way of writing it shows.
 */
function maskUnparsed(url: string): string {
  let m = url.replace(/((?:ssl)?password=)[^&#]*/gi, '$1***');
  const scheme = m.indexOf('://');
  const at = m.lastIndexOf('@');
  if (scheme >= 0 && at > scheme) {
    const colon = m.indexOf(':', scheme + 3);
    if (colon >= 0 && colon < at) m = `${m.slice(0, colon + 1)}***${m.slice(at)}`;
  }
  return m;
}

/** Parses a state URL as node-postgres does (pg-connection-string): undefined when it cannot. */
function parseAsPg(url: string): URL | undefined {
  // pg encodes spaces and stray % signs before parsing, and allows an empty host before a path.
  const text = /\s|%[^a-f0-9]|%[a-f0-9][^a-f0-9]/i.test(url)
    ? encodeURI(url).replace(/%25(\d\d)/g, '%$1')
    : url;
  for (const candidate of [text, text.replace('@/', '@host/')]) {
    try {
      return new URL(candidate);
    } catch {}
  }
  return undefined;
}

/** What is wrong with the host and port part of a URL that does not parse, when it shows. */
function authorityProblem(url: string): string {
  const rest = url.slice(url.indexOf('://') + 3);
  const end = rest.search(/[/?#]/);
  const authority = end < 0 ? rest : rest.slice(0, end);
  // An @ after the host's end: the password holds / ? or #, and the "host" is part of it.
  if (end >= 0 && rest.lastIndexOf('@') > end) {
    return 'a / ? or # before its last @ ends the host early';
  }
  const hostPort = authority.slice(authority.lastIndexOf('@') + 1);
  if (hostPort.startsWith('[') && !hostPort.includes(']')) {
    return 'its IPv6 address opens with [ but is not closed with ]';
  }
  const port = hostPort.startsWith('[')
    ? hostPort.slice(hostPort.indexOf(']') + 2)
    : hostPort.slice(hostPort.indexOf(':') + 1);
  const hasPort = hostPort.slice(hostPort.lastIndexOf(']') + 1).includes(':');
  if (hasPort && !(/^\d{1,5}$/.test(port) && Number(port) >= 1 && Number(port) <= 65535)) {
    return `its port "${port}" is not a number from 1 to 65535`;
  }
  return 'it does not parse as a URL';
}

/**
 * Refuses a PostgreSQL URL node-postgres could not use as meant: one that does not parse
 * (pg would fail with a bare "Invalid URL"), or an sslmode pg does not know (pg would
 * silently use TLS with its own checks). Messages show the URL with its password masked.
 */
export function checkPostgresUrl(url: string, from: string): void {
  const shown = JSON.stringify(redactStateUrl(url));
  const parsed = parseAsPg(url);
  if (parsed === undefined) {
    throw new UsageError(
      `${from} ${shown} is not a usable URL: ${authorityProblem(url)}; use ${FORM}`,
    );
  }
  // pg takes the last of a repeated parameter; every one must be known.
  const sslmode = parsed.searchParams.getAll('sslmode').find((m) => !SSL_MODES.includes(m));
  if (sslmode !== undefined) {
    throw new UsageError(
      `${from} ${shown} has sslmode=${JSON.stringify(sslmode)}, which is not one of ${SSL_MODES.join(', ')}: use sslmode=verify-full to check the server's certificate and name, or disable on a trusted network`,
    );
  }
  const host = remoteHost(parsed);
  if (
    host !== undefined &&
    !parsed.searchParams.has('sslmode') &&
    !parsed.searchParams.has('ssl')
  ) {
    throw new UsageError(
      `${from} ${shown} would connect to ${host} without TLS, and its password and every payout would cross the network in clear: add ?sslmode=verify-full (the server's certificate and name checked; sslrootcert=/path/ca.pem for a private CA), or write sslmode=disable to connect in clear on a network you trust`,
    );
  }
}

/**
 * The host a URL connects to over the network, or undefined when it stays on this machine:
 * a loopback address or name (api/base-url.ts), a Unix socket (a host that is a path, or
 * none: pg then connects to localhost).
 */
function remoteHost(url: URL): string | undefined {
  const param = url.searchParams.get('host');
  const host = param ?? decodeURIComponent(url.hostname);
  if (host === '' || host === 'host' || host.startsWith('/') || /^%2f/i.test(host))
    return undefined;
  return isLoopbackHost(host) ? undefined : host;
}

/** Whether a state URL carries a password (in its user part, or as a parameter). */
export function carriesPassword(url: string): boolean {
  const parsed = parseAsPg(url.trim());
  if (parsed === undefined) return /:[^/@]*@/.test(url) || /[?&](ssl)?password=/i.test(url);
  return (
    parsed.password !== '' ||
    parsed.searchParams.has('password') ||
    parsed.searchParams.has('sslpassword')
  );
}

/** How a password reaches the history without a command line, for a refusal. */
export const PASSWORD_WAYS =
  'give it in PGPASSWORD, in ~/.pgpass (a line HOST:PORT:DATABASE:USER:PASSWORD, mode 0600), or with the whole URL in PAYOUTS_STATE_URL; `payouts config set state_url URL` asks for it on a terminal and keeps it in the 0600 config file';

/**
 * Refuses a state URL given on the command line with a password in it: other users read
 * command lines (/proc/PID/cmdline, ps) and the shell keeps them in its history.
 */
function refusePasswordOnCommandLine(url: string, from: string): void {
  if (!carriesPassword(url)) return;
  throw new UsageError(
    `${from} ${JSON.stringify(redactStateUrl(url))} carries a password on the command line, where other users of this machine can read it and the shell keeps it: leave it out of the URL and ${PASSWORD_WAYS}`,
  );
}

/** Every secret a state URL carries, to remove from messages that came from elsewhere. */
export function secretsOf(url: string): string[] {
  try {
    const u = new URL(url.trim());
    const out = [u.password, decodeURIComponent(u.password)];
    for (const key of ['password', 'sslpassword']) {
      const v = u.searchParams.get(key);
      if (v) out.push(v);
    }
    return out.filter((s) => s.length > 0);
  } catch {
    return [url];
  }
}

/** A message with every secret of a state URL, and the URL itself, made safe to show. */
export function redactMessage(message: string, url: string): string {
  let m = message.split(url).join(redactStateUrl(url));
  for (const secret of secretsOf(url)) m = m.split(secret).join('***');
  return m;
}

/**
 * The state URL in force: --state-url, else PAYOUTS_STATE_URL, else the profile's state_url;
 * undefined means the state folder. A URL that is not postgres:// is a usage error that
 * shows it redacted.
 */
export function chooseStateUrl(
  ...candidates: Array<{ value: string | undefined; from: string; commandLine?: boolean }>
): string | undefined {
  for (const c of candidates) {
    const v = c.value?.trim();
    if (!v) continue;
    if (!isPostgresUrl(v)) {
      throw new UsageError(
        `${c.from} ${JSON.stringify(redactStateUrl(v))} is not a PostgreSQL URL: use ${FORM}, or leave it unset to keep the history in the state folder`,
      );
    }
    checkPostgresUrl(v, c.from);
    if (c.commandLine) refusePasswordOnCommandLine(v, c.from);
    return v;
  }
  return undefined;
}

/**
 * A state URL with `password` in its user part (percent-encoded), for a connection: the URL
 * itself when it carries one already or `password` is undefined.
 */
export function withPassword(url: string, password: string | undefined): string {
  if (password === undefined || password === '' || carriesPassword(url)) return url;
  const scheme = url.indexOf('://') + 3;
  const rest = url.slice(scheme);
  const end = rest.search(/[/?#]/);
  const authority = end < 0 ? rest : rest.slice(0, end);
  const at = authority.lastIndexOf('@');
  const user = at < 0 ? '' : authority.slice(0, at);
  const host = authority.slice(at + 1);
  return `${url.slice(0, scheme)}${user}:${encodeURIComponent(password)}@${host}${rest.slice(authority.length)}`;
}
