/** A shared history's address: what may be shown of it, and what it is. */
import { UsageError } from '../../errors.js';

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
    return '(a state URL that does not parse)';
  }
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
  ...candidates: Array<{ value: string | undefined; from: string }>
): string | undefined {
  for (const c of candidates) {
    const v = c.value?.trim();
    if (!v) continue;
    if (!isPostgresUrl(v)) {
      throw new UsageError(
        `${c.from} ${JSON.stringify(redactStateUrl(v))} is not a PostgreSQL URL: use postgres://USER:PASSWORD@HOST:5432/DATABASE (add ?sslmode=verify-full for TLS), or leave it unset to keep the history in the state folder`,
      );
    }
    return v;
  }
  return undefined;
}
