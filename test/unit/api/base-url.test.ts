import { describe, expect, it } from 'vitest';
import { isHttpUrl, normalizeBaseUrl, parseHttpUrl } from '../../../src/api/base-url.js';
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
