import { describe, expect, it } from 'vitest';
import { chooseStateUrl, redactStateUrl } from '../../../src/state/pg/url.js';

const choose = (url: string) => chooseStateUrl({ value: url, from: '--state-url' });

describe('state URLs', () => {
  it('accepts every form node-postgres reads, each sslmode it knows among them', () => {
    for (const url of [
      'postgres://u:p@db.example.invalid/payouts',
      'postgresql://u:p@db.example.invalid:6543/payouts',
      'postgres://u:p@[::1]:5432/payouts',
      'postgres://u:p%40ss@127.0.0.1/payouts',
      'postgres://u:p@/payouts?host=/var/run/postgresql',
      'postgres://u:p w@127.0.0.1/payouts',
      'postgres://u@127.0.0.1/payouts?options=-c%20search_path%3Dx',
      ...['disable', 'prefer', 'require', 'verify-ca', 'verify-full', 'no-verify'].map(
        (mode) => `postgres://u:p@127.0.0.1/payouts?sslmode=${mode}`,
      ),
    ]) {
      expect(choose(url), url).toBe(url);
    }
  });

  it('refuses an sslmode pg would not act on, a repeated one too', () => {
    for (const mode of ['bogus', 'VERIFY-FULL', 'allow', '']) {
      expect(() => choose(`postgres://u:p@h.invalid/db?sslmode=${mode}`)).toThrow(
        `has sslmode="${mode}", which is not one of`,
      );
    }
    expect(() => choose('postgres://u:p@h.invalid/db?sslmode=verify-full&sslmode=x')).toThrow(
      'sslmode="x"',
    );
  });

  it('masks the password of a URL that does not parse, however it is written', () => {
    expect(redactStateUrl('postgres://u:s3cr@t@h.invalid:1:2/db')).toBe(
      'postgres://u:***@h.invalid:1:2/db',
    );
    expect(redactStateUrl('postgres://u@h.invalid:x/db?password=s3cret&sslpassword=k3y')).toBe(
      'postgres://u@h.invalid:x/db?password=***&sslpassword=***',
    );
    expect(redactStateUrl('postgres://:s3cret@[::1/db')).toBe('postgres://:***@[::1/db');
  });
});
