import { describe, expect, it } from 'vitest';
import {
  chooseStateUrl,
  redactPasswords,
  redactStateUrl,
  redactWord,
} from '../../../src/state/pg/url.js';

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

describe('passwords in a recorded command line', () => {
  it('masks every way a URL or a parameter carries one, and nothing else', () => {
    const cases: Array<[string, string]> = [
      [
        'payouts send a.csv --state-url postgres://ana:s3cret@db.invalid/pay --yes',
        'payouts send a.csv --state-url postgres://ana:***@db.invalid/pay --yes',
      ],
      // As shellWord quotes a word with a space; an unencoded @ in the password.
      [
        "payouts send a.csv --state-url 'postgres://ana:s3 cret@db.invalid/pay'",
        "payouts send a.csv --state-url 'postgres://ana:***@db.invalid/pay'",
      ],
      [
        '--state-url postgres://ana:p@ss@db.invalid/pay',
        '--state-url postgres://ana:***@db.invalid/pay',
      ],
      [
        '--state-url postgres://db.invalid/pay?user=ana&password=s3cret&sslmode=require',
        '--state-url postgres://db.invalid/pay?user=ana&password=***&sslmode=require',
      ],
      [
        '--webhook-url https://u:tok@hooks.invalid/x',
        '--webhook-url https://u:***@hooks.invalid/x',
      ],
    ];
    for (const [line, masked] of cases) {
      expect(redactPasswords(line)).toBe(masked);
      expect(redactPasswords(line)).not.toMatch(/s3 ?cret|p@ss|tok@/);
    }
    const plain = "payouts send 'my file.csv' --base-url http://127.0.0.1:8080 --map amount=Betrag";
    expect(redactPasswords(plain)).toBe(plain);
    expect(redactWord('postgres://ana@db.invalid:5432/pay')).toBe(
      'postgres://ana@db.invalid:5432/pay',
    );
  });
});
