import { describe, expect, it } from 'vitest';
import {
  isHttpUrl,
  isLoopbackHost,
  isLoopbackUrl,
  loopbackLookup,
  normalizeBaseUrl,
  parseHttpUrl,
} from '../../../src/api/base-url.js';
import { UsageError } from '../../../src/errors.js';

describe('parseHttpUrl', () => {
  it('parses absolute http and https URLs and says why anything else is refused', () => {
    expect(parseHttpUrl('https://a.example/x?y=1')).toBeInstanceOf(URL);
    expect(isHttpUrl('HTTP://a.example')).toBe(true);
    expect(parseHttpUrl('mailto:x@y')).toBe('not-http');
    expect(parseHttpUrl('ftp://a.example')).toBe('not-http');
    expect(parseHttpUrl('/relative/path')).toBe('not-a-url');
    expect(parseHttpUrl('')).toBe('not-a-url');
    expect(isHttpUrl('a.example/hooks')).toBe(false);
  });
});

describe('normalizeBaseUrl', () => {
  it('keeps a path prefix without its trailing slash', () => {
    expect(normalizeBaseUrl(' https://pay.example.com/merchant/ ')).toBe(
      'https://pay.example.com/merchant',
    );
    expect(normalizeBaseUrl('http://127.0.0.1:8080')).toBe('http://127.0.0.1:8080');
  });

  it.each([
    ['pay.example.com', /^--base-url "pay.example.com" is not a URL: use one such as https:/],
    ['ftp://pay.example.com', /^--base-url "ftp:\/\/pay.example.com": use an https:\/\/ URL$/],
    ['http://pay.example.com', /plain http would send the credentials unencrypted/],
    ['https://u:p@pay.example.com', /^--base-url: remove the user name and password/],
    ['https://pay.example.com/?a=1', /remove the query string or fragment$/],
  ])('refuses %j with a usage error naming the option', (raw, message) => {
    expect(() => normalizeBaseUrl(raw)).toThrow(UsageError);
    expect(() => normalizeBaseUrl(raw)).toThrow(message);
  });
});

describe('loopback', () => {
  it('is localhost, 127.0.0.0/8 and ::1, however written; never a name under .localhost', () => {
    for (const yes of ['localhost', 'LOCALHOST', '127.0.0.1', '127.1.2.3', '[::1]', '::1']) {
      expect(isLoopbackHost(yes), yes).toBe(true);
    }
    for (const no of ['pay.localhost', 'localhost.', 'localhost.example.com', '128.0.0.1', '::2']) {
      expect(isLoopbackHost(no), no).toBe(false);
    }
    // The URL parser writes 127.1 and 0x7f.1 as 127.0.0.1.
    expect(isLoopbackUrl('http://127.1:8080')).toBe(true);
    expect(isLoopbackUrl('http://0x7f.1')).toBe(true);
    expect(isLoopbackUrl('https://pay.localhost')).toBe(false);
    expect(() => normalizeBaseUrl('http://pay.localhost:8080')).toThrow(/plain http/);
  });

  it('finds localhost without asking any resolver, and refuses any other name', () => {
    const seen: unknown[] = [];
    loopbackLookup('localhost', { all: true }, (err, addresses) => seen.push(err, addresses));
    loopbackLookup('localhost', { family: 6 }, (err, address, family) =>
      seen.push(err, address, family),
    );
    loopbackLookup('pay.example.com', {}, (err) => seen.push((err as { code?: string }).code));
    expect(seen).toEqual([
      null,
      [
        { address: '127.0.0.1', family: 4 },
        { address: '::1', family: 6 },
      ],
      null,
      '::1',
      6,
      'ENOTFOUND',
    ]);
  });
});
