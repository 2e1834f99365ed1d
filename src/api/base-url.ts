import { UsageError } from '../errors.js';

/** Whether a URL host is on this machine, where plain HTTP exposes nothing on the network. */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return (
    h === 'localhost' || h.endsWith('.localhost') || h === '::1' || /^127(\.\d{1,3}){3}$/.test(h)
  );
}

/**
 * Checks a base URL and returns it without a trailing slash. A path prefix is kept
 * (https://pay.example.com/merchant). Plain HTTP is refused unless the host is loopback,
 * so credentials never cross a network unencrypted.
 */
export function normalizeBaseUrl(raw: string, source = '--base-url'): string {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new UsageError(
      `${source} ${JSON.stringify(raw)} is not a URL: use one such as https://pay.example.com`,
    );
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new UsageError(`${source} ${JSON.stringify(raw)}: use an https:// URL`);
  }
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
    throw new UsageError(
      `${source} ${JSON.stringify(raw)}: plain http would send the credentials unencrypted; use https:// (plain http is allowed only for localhost and 127.0.0.1)`,
    );
  }
  if (url.username || url.password) {
    throw new UsageError(`${source}: remove the user name and password from the URL`);
  }
  if (url.search || url.hash) {
    throw new UsageError(`${source} ${JSON.stringify(raw)}: remove the query string or fragment`);
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}
