/** What a PostgreSQL error means to the user, without the URL's secrets. */
import { type PayoutsError, StateStoreError } from '../../errors.js';
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

/** The state of the database's error, or the error's own message, without the URL's secrets. */
export function failure(err: unknown, url: string, doing: string): PayoutsError {
  const message = redactMessage(err instanceof Error ? err.message : String(err), url);
  if (connectionLost(err)) {
    return new StateStoreError(
      `the connection to the shared history at ${redactStateUrl(url)} was lost while ${doing} (${message}): once the database is reachable, run the same command again; it reads back what this run left in doubt`,
      { cause: err },
    );
  }
  return new StateStoreError(
    `the shared history at ${redactStateUrl(url)} failed while ${doing}: ${message}`,
  );
}
