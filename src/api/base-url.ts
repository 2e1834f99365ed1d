import type { LookupAddress, LookupOptions } from 'node:dns';
import { UsageError } from '../errors.js';

/**
 * Whether a URL host is this machine, where plain HTTP exposes nothing on the network: only
 * `localhost`, 127.0.0.0/8 and ::1, each known without a lookup (loopbackLookup). A name
 * under .localhost is not: a resolver would be asked for it, and the network's may answer.
 */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127(\.\d{1,3}){3}$/.test(h);
}

/** The addresses of `localhost`, in the order they are tried. */
const LOCALHOST: LookupAddress[] = [
  { address: '127.0.0.1', family: 4 },
  { address: '::1', family: 6 },
];

/**
 * The `lookup` of connections to a loopback base URL: `localhost` is 127.0.0.1 and ::1 without
 * asking the hosts file or a DNS server, so no answer from the network can send the
 * credentials elsewhere (an address is not looked up at all). Any other name is refused.
 */
export function loopbackLookup(
  hostname: string,
  options: LookupOptions,
  callback: (err: Error | null, address: string | LookupAddress[], family?: number) => void,
): void {
  const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : options.family;
  const found = LOCALHOST.filter((a) => !family || a.family === family);
  const first = found[0];
  if (hostname.toLowerCase() !== 'localhost' || first === undefined) {
    const err = Object.assign(new Error(`${hostname} is not a loopback name`), {
      code: 'ENOTFOUND',
    });
    callback(err, '');
    return;
  }
  if (options.all) callback(null, found);
  else callback(null, first.address, first.family);
}

/** Whether a base URL's host is loopback (see isLoopbackHost). */
export function isLoopbackUrl(baseUrl: string): boolean {
  const url = parseHttpUrl(baseUrl);
  return typeof url !== 'string' && isLoopbackHost(url.hostname);
}

/** Why a text is not an absolute http:// or https:// URL. */
export type NotHttpUrl = 'not-a-url' | 'not-http';

/** Parses an absolute http:// or https:// URL, or says why the text is not one. */
export function parseHttpUrl(text: string): URL | NotHttpUrl {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'not-a-url';
  }
  return url.protocol === 'https:' || url.protocol === 'http:' ? url : 'not-http';
}

/** Whether a text is an absolute http:// or https:// URL. */
export function isHttpUrl(text: string): boolean {
  return typeof parseHttpUrl(text) !== 'string';
}

/**
 * The http(s) URL a text names; otherwise throws the error `refuse` builds, so each option
 * keeps its own message.
 */
export function httpUrl(text: string, refuse: (why: NotHttpUrl) => Error): URL {
  const url = parseHttpUrl(text);
  if (typeof url === 'string') throw refuse(url);
  return url;
}

/**
 * Checks a base URL and returns it without a trailing slash. A path prefix is kept
 * (https://pay.example.com/merchant). Plain HTTP is refused unless the host is loopback,
 * so credentials never cross a network unencrypted.
 */
export function normalizeBaseUrl(raw: string, source = '--base-url'): string {
  const url = httpUrl(raw.trim(), (why) =>
    why === 'not-a-url'
      ? new UsageError(
          `${source} ${JSON.stringify(raw)} is not a URL: use one such as https://pay.example.com`,
        )
      : new UsageError(`${source} ${JSON.stringify(raw)}: use an https:// URL`),
  );
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
    throw new UsageError(
      `${source} ${JSON.stringify(raw)}: plain http would send the credentials unencrypted; use https:// (plain http is allowed only for localhost, 127.0.0.0/8 and [::1])`,
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

/**
 * The one spelling of a service's base URL that approvals compare and key by: scheme and host
 * in lower case, no default port, no trailing "/", and every loopback alias (localhost,
 * 127.0.0.1, [::1]) as "localhost", so a rule holds however its URL is written.
 */
export function serviceIdentity(baseUrl: string): string {
  const url = parseHttpUrl(baseUrl.trim());
  if (typeof url === 'string') return baseUrl.trim();
  const host = isLoopbackHost(url.hostname) ? 'localhost' : url.hostname;
  const port = url.port ? `:${url.port}` : '';
  return `${url.protocol}//${host}${port}${url.pathname.replace(/\/+$/, '')}`;
}
