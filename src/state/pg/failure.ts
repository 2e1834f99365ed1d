/** What a PostgreSQL error means to the user, without the URL's secrets. */
import type pg from 'pg';
import {
  CredentialsError,
  InterruptedError,
  type PayoutsError,
  StateStoreError,
  UsageError,
} from '../../errors.js';
import { carriesPassword, PASSWORD_WAYS, redactMessage, redactStateUrl } from './url.js';

/**
 * Whether an error means the session is gone: the server stopped or restarted (SQLSTATE class
 * 57P), the network dropped, or node-postgres refuses a client whose connection failed.
 */
function connectionLost(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  if (
    typeof code === 'string' &&
    /^(57P0[123]|ECONNRESET|ECONNREFUSED|EPIPE|ETIMEDOUT)$/.test(code)
  )
    return true;
  const message = err instanceof Error ? err.message : String(err);
  return /Connection terminated|connection error and is not queryable|Client was closed/i.test(
    message,
  );
}

/**
 * What to do about a TLS failure: the server lacks TLS, or its certificate cannot be checked;
 * '' for any other failure.
 */
function tlsHint(message: string, url: string): string {
  const mode = /[?&]sslmode=([^&#]*)/.exec(url)?.[1] ?? '';
  if (/does not support SSL/i.test(message)) {
    return `. The server does not offer TLS, which sslmode=${mode || 'require'} asks for: turn TLS on at the server (ssl = on, with a certificate for its name), or, on a network you trust, connect with sslmode=disable`;
  }
  if (/self[- ]signed|unable to (get|verify)|certificate|altnames|hostname/i.test(message)) {
    return `. The server's certificate could not be checked (sslmode=${mode}): give its CA with sslrootcert=/path/ca.pem, make the certificate name the host of the URL, or, to encrypt without checking, use sslmode=no-verify`;
  }
  return '';
}

/** The state of the database's error, or the error's own message, without the URL's secrets. */
export function failure(err: unknown, url: string, doing: string): PayoutsError {
  const raw = err instanceof Error ? err.message : String(err);
  if (/^Query read timeout$/.test(raw)) {
    return new StateStoreError(
      `the shared history at ${redactStateUrl(url)} did not answer within ${HISTORY_TIMEOUTS.queryMs / 1000} s while ${doing}: once it answers again, run the same command again; it reads back what this run left in doubt`,
      { cause: err },
    );
  }
  const message = redactMessage(raw, url) + tlsHint(raw, url);
  if (connectionLost(err)) {
    return new StateStoreError(
      `the connection to the shared history at ${redactStateUrl(url)} was lost while ${doing} (${message}): once the database is reachable, run the same command again; it reads back what this run left in doubt`,
      { cause: err },
    );
  }
  const code = (err as { code?: unknown })?.code;
  // Refused by a rule of the history (its words start "payouts: ") or for want of a grant:
  // running again cannot help (exit 2); the owner of the tables decides.
  if (raw.startsWith('payouts: ')) {
    return new UsageError(
      `the shared history at ${redactStateUrl(url)} refused that (${doing}): ${message.slice(9)}. It is a rule the database keeps whatever a role is granted, which running again cannot change (docs/approvals.md, "What the database keeps"); nothing was changed`,
    );
  }
  if (code === '42501') {
    return new UsageError(
      `the shared history at ${redactStateUrl(url)} does not let this role do that (${doing}: ${message})${grantHint(err, url)}; nothing was changed`,
    );
  }
  // The URL's search_path names a schema the database does not have (exit 2: fix the URL).
  if (code === '3F000') {
    return new UsageError(
      `the shared history at ${redactStateUrl(url)} has no schema to use (${doing}: ${message}): create the schema the URL's search_path names (CREATE SCHEMA name, as the owner of the history), or correct the search_path in ${WHERE_SET}; nothing was changed`,
    );
  }
  return new StateStoreError(
    `the shared history at ${redactStateUrl(url)} failed while ${doing}: ${message}`,
  );
}

/**
 * Who can give what PostgreSQL refused a role (SQLSTATE 42501), when it was a grant and not
 * one of the history's own rules (whose words start "payouts:"); '' for any other failure.
 */
function grantHint(err: unknown, url: string): string {
  const code = (err as { code?: unknown })?.code;
  const raw = err instanceof Error ? err.message : String(err);
  if (code !== '42501' || raw.startsWith('payouts:')) return '';
  if (/permission denied for (schema|database)/.test(raw)) {
    return '. Only the owner of the history\'s tables makes or updates them: run one payouts command (such as `payouts runs`) with the owner\'s role, then run the same command again (docs/approvals.md, "Who is who")';
  }
  const owner = (err as { owner?: unknown })?.owner;
  const who = typeof owner === 'string' ? ` (role "${owner}")` : '';
  return `. The role "${parts(url).user}" has no grant for this: ask the owner of the history's tables${who} to grant it, as docs/approvals.md ("Who is who") lists for a person; changing the rule of approvals stays the owner's`;
}

/** What of a state URL a refusal names: host, port, user and database, never the password. */
function parts(url: string): { host: string; port: string; user: string; db: string } {
  try {
    const u = new URL(url.trim());
    const db = decodeURIComponent(u.pathname.replace(/^\//, ''));
    return { host: u.hostname, port: u.port || '5432', user: decodeURIComponent(u.username), db };
  } catch {
    return { host: '?', port: '5432', user: '?', db: '?' };
  }
}

/** The characters of the URL's password that must be percent-encoded, as written in it. */
function unencoded(url: string): string[] {
  const scheme = url.indexOf('://');
  const at = url.lastIndexOf('@');
  const colon = url.indexOf(':', scheme + 3);
  if (scheme < 0 || colon < 0 || at < colon) return [];
  const password = url.slice(colon + 1, at);
  return [...new Set(password.match(/[@:/?#[\] ]|%(?![0-9A-Fa-f]{2})/g) ?? [])];
}

/** Where to change the URL: the two places a state URL comes from. */
const WHERE_SET =
  'the state URL (--state-url, PAYOUTS_STATE_URL or `payouts config set state_url`)';

/**
 * What a failure to open a session means, in the words of what to do: nothing listens there,
 * the host is unknown, the password or the database is wrong. Undefined for other failures.
 */
function connectFailure(err: unknown, url: string, waitedMs: number): PayoutsError | undefined {
  const code = String((err as { code?: unknown })?.code ?? '');
  const { host, port, user, db } = parts(url);
  const head = `cannot connect to the shared history at ${redactStateUrl(url)}`;
  const again = 'then run the same command again';
  const fix = (text: string) => new StateStoreError(`${head}: ${text}`, { cause: err });
  const message = err instanceof Error ? err.message : String(err);
  if (/timeout expired|connection timeout/i.test(message))
    return fix(
      `${host}:${port} did not answer within ${waitedMs / 1000} s: check that PostgreSQL runs there (a port that accepts connections and says nothing is not it) and that a firewall lets this machine through; ${again}`,
    );
  // A password the server asks for and no one gave: credentials missing (exit 3), as a refused one.
  const noPassword = code === '28P01' && !carriesPassword(url);
  if (noPassword || /password must be a string|no password (was )?supplied/i.test(message))
    return new CredentialsError(
      `${head}: the server asks user "${user}" for a password and none was given: ${PASSWORD_WAYS}; ${again}`,
      { cause: err },
    );
  if (code === 'ECONNREFUSED')
    return fix(
      `nothing is listening at ${host}:${port} (the connection was refused): start PostgreSQL there, or correct the host or port in ${WHERE_SET}; ${again}`,
    );
  if (/^(ENOTFOUND|EAI_AGAIN|EAI_NONAME|EAI_FAIL)$/.test(code))
    return fix(
      `the host name "${host}" is not known (its DNS lookup failed${code === 'EAI_AGAIN' ? ' for now' : ''}): check its spelling in ${WHERE_SET}, and that this machine can resolve it; ${again}`,
    );
  if (code === 'ETIMEDOUT')
    return fix(
      `${host}:${port} did not answer (timed out): check that the database runs and that a firewall lets this machine reach that port; ${again}`,
    );
  if (code === '28P01') {
    const chars = unencoded(url);
    const encode =
      chars.length > 0
        ? `the password in the URL holds ${chars.map((c) => `"${c}"`).join(', ')}, which must be written percent-encoded (${chars.map((c) => `${c} as ${encodeURIComponent(c)}`).join(', ')})`
        : 'if the password holds @ : / ? # [ ] % or a space, write each percent-encoded in the URL (@ as %40, : as %3A, / as %2F, % as %25)';
    return new CredentialsError(
      `${head}: PostgreSQL refused the password of user "${user}": check it; ${encode}; ${again}`,
      { cause: err },
    );
  }
  if (code === '3D000')
    return new UsageError(
      `${head}: the database "${db}" does not exist on ${host}:${port}: create it (createdb -h ${host} -p ${port} ${db}), or correct its name in ${WHERE_SET}`,
      { cause: err },
    );
  if (code === '28000')
    return new CredentialsError(
      `${head}: PostgreSQL does not let user "${user}" in (${redactMessage(err instanceof Error ? err.message : String(err), url)}): check the user name, and that the server's pg_hba.conf admits it from this machine`,
      { cause: err },
    );
  return undefined;
}

/**
 * Runs `work` on a session; a refusal for want of a grant (SQLSTATE 42501, not a rule of the
 * history) comes back with the role that owns the history's tables as its `owner`, whom the
 * message then names as the one who grants it. `work` must have ended its transaction.
 */
export async function namingOwner<T>(c: pg.Client, work: (c: pg.Client) => Promise<T>): Promise<T> {
  try {
    return await work(c);
  } catch (err) {
    const { code, message } = err as { code?: unknown; message?: unknown };
    if (code !== '42501' || String(message).startsWith('payouts: ')) throw err;
    const r = await c
      .query<{ owner: string | null }>(
        `SELECT coalesce(
           (SELECT pg_catalog.pg_get_userbyid(t.relowner) FROM pg_catalog.pg_class t
             WHERE t.oid = pg_catalog.to_regclass('runs')),
           (SELECT pg_catalog.pg_get_userbyid(n.nspowner) FROM pg_catalog.pg_namespace n
             WHERE n.nspname = pg_catalog.current_schema())) AS owner`,
      )
      .catch(() => undefined);
    const owner = r?.rows[0]?.owner;
    if (owner) Object.assign(err as object, { owner });
    throw err;
  }
}

/**
 * How long a shared history may take: to open a session (libpq's `connect_timeout` in the URL,
 * in seconds, overrides it), to run a statement (the server cancels it; `statement_timeout` in
 * the URL overrides it), to answer a query (this side stops waiting on a server gone silent),
 * and idle inside a transaction (the server ends such a session, and its locks go with it).
 */
export const HISTORY_TIMEOUTS = {
  connectMs: 10_000,
  statementMs: 60_000,
  queryMs: 75_000,
  idleInTransactionMs: 60_000,
} as const;

/** The connect timeout a URL asks for (`connect_timeout`, seconds, as libpq reads it), else the default. */
export function connectTimeoutOf(url: string): number {
  const m = /[?&]connect_timeout=(\d+(?:\.\d+)?)(?:&|#|$)/.exec(url);
  const seconds = m ? Number(m[1]) : 0;
  // libpq: 0 or none waits for ever, which a command must not; under 2 s it uses 2.
  return seconds > 0 ? Math.max(2, seconds) * 1000 : HISTORY_TIMEOUTS.connectMs;
}

/**
 * A session on the database (pg is loaded only then); a failure to connect named without
 * secrets. `stop` (a Ctrl-C) ends the wait for it at once: its socket is destroyed and an
 * InterruptedError says so.
 */
export async function connectTo(url: string, stop?: AbortSignal): Promise<pg.Client> {
  const [{ default: pgModule }, { Socket }] = await Promise.all([import('pg'), import('node:net')]);
  const connectMs = connectTimeoutOf(url);
  // The socket is made here, so that a stop can destroy it while pg waits for the server.
  let socket: InstanceType<typeof Socket> | undefined;
  const client = new pgModule.Client({
    stream: () => {
      socket = new Socket();
      return socket;
    },
    connectionString: url,
    application_name: 'payouts',
    connectionTimeoutMillis: connectMs,
    statement_timeout: HISTORY_TIMEOUTS.statementMs,
    query_timeout: HISTORY_TIMEOUTS.queryMs,
    idle_in_transaction_session_timeout: HISTORY_TIMEOUTS.idleInTransactionMs,
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  });
  // A lost connection is reported by the next query; an unhandled 'error' would end the process.
  client.on('error', () => {});
  const onStop = () => socket?.destroy();
  stop?.addEventListener('abort', onStop, { once: true });
  try {
    if (stop?.aborted) throw stop.reason;
    await client.connect();
  } catch (err) {
    await client.end().catch(() => {});
    if (stop?.aborted) {
      throw new InterruptedError(
        `interrupted while connecting to the shared history at ${redactStateUrl(url)}: nothing was read or changed there`,
      );
    }
    throw connectFailure(err, url, connectMs) ?? failure(err, url, 'connecting');
  } finally {
    stop?.removeEventListener('abort', onStop);
  }
  return client;
}
