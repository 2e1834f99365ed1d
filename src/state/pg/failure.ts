/** What a PostgreSQL error means to the user, without the URL's secrets. */
import type pg from 'pg';
import { type PayoutsError, StateStoreError, UsageError } from '../../errors.js';
import { redactMessage, redactStateUrl } from './url.js';

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
  const message = redactMessage(raw, url) + tlsHint(raw, url);
  if (connectionLost(err)) {
    return new StateStoreError(
      `the connection to the shared history at ${redactStateUrl(url)} was lost while ${doing} (${message}): once the database is reachable, run the same command again; it reads back what this run left in doubt`,
      { cause: err },
    );
  }
  // A role not granted what it asked: no point running again (exit 2), the owner decides.
  if ((err as { code?: unknown })?.code === '42501' && !raw.startsWith('payouts: ')) {
    return new UsageError(
      `the shared history at ${redactStateUrl(url)} does not let this role do that (${doing}: ${message}): the owner of the history grants each role what it may do (docs/approvals.md, "Who is who"); nothing was changed`,
    );
  }
  return new StateStoreError(
    `the shared history at ${redactStateUrl(url)} failed while ${doing}: ${message}`,
  );
}

/** A session on the database (pg is loaded only then); a failure to connect named without secrets. */
export async function connectTo(url: string): Promise<pg.Client> {
  const { default: pgModule } = await import('pg');
  const client = new pgModule.Client({ connectionString: url, application_name: 'payouts' });
  // A lost connection is reported by the next query; an unhandled 'error' would end the process.
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (err) {
    await client.end().catch(() => {});
    throw failure(err, url, 'connecting');
  }
  return client;
}
