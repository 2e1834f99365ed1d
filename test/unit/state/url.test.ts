import { describe, expect, it } from 'vitest';
import {
  chooseStateUrl,
  redactPasswords,
  redactStateUrl,
  redactWord,
  withoutPassword,
  withPassword,
} from '../../../src/state/pg/url.js';

const choose = (url: string) => chooseStateUrl({ value: url, from: '--state-url' });

describe('state URLs', () => {
  it('accepts every form node-postgres reads, each sslmode it knows among them', () => {
    for (const url of [
      'postgres://u:p@db.example.invalid/payouts?sslmode=verify-full',
      'postgresql://u:p@db.example.invalid:6543/payouts?sslmode=disable',
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

  it('refuses a remote history without TLS unless sslmode says so, written out', () => {
    for (const url of [
      'postgres://u@db.example.invalid/payouts',
      'postgres://u@10.0.0.5:5432/db',
    ]) {
      expect(() => choose(url)).toThrow(
        /would connect to (db\.example\.invalid|10\.0\.0\.5) without TLS, and its password and every payout would cross the network in clear: add \?sslmode=verify-full .* or write sslmode=disable/,
      );
    }
    // This machine, or said in so many words.
    for (const url of [
      'postgres://u@127.0.0.1/db',
      'postgres://u@localhost:5433/db',
      'postgres://u@[::1]/db',
      'postgres://u@/db?host=/var/run/postgresql',
      'postgres:///db',
      'postgres://u@db.example.invalid/payouts?sslmode=disable',
      'postgres://u@db.example.invalid/payouts?ssl=true',
    ]) {
      expect(choose(url), url).toBe(url);
    }
  });

  it('refuses a password on a command line, saying how to give it, never showing it', () => {
    const given = (url: string) =>
      chooseStateUrl({ value: url, from: '--state-url', commandLine: true });
    for (const url of [
      'postgres://ana:s3cret@127.0.0.1/db',
      'postgres://ana@127.0.0.1/db?password=s3cret',
      'postgres://ana@127.0.0.1/db?sslpassword=s3cret',
    ]) {
      let said = '';
      try {
        given(url);
      } catch (e) {
        said = (e as Error).message;
      }
      expect(said).toMatch(
        /carries a password on the command line, where other users of this machine can read it and the shell keeps it: leave it out of the URL and give it in PGPASSWORD, in ~\/\.pgpass/,
      );
      expect(said).not.toContain('s3cret');
    }
    expect(given('postgres://ana@127.0.0.1/db')).toBe('postgres://ana@127.0.0.1/db');
    // The environment and the profile are no command line.
    expect(choose('postgres://ana:s3cret@127.0.0.1/db')).toBe('postgres://ana:s3cret@127.0.0.1/db');
  });

  it('puts a password into a URL for the connection, and takes it out for a command to copy', () => {
    expect(withPassword('postgres://ana@db.invalid:5432/p?sslmode=disable', 'p@ss:w/rd')).toBe(
      'postgres://ana:p%40ss%3Aw%2Frd@db.invalid:5432/p?sslmode=disable',
    );
    expect(withPassword('postgres://db.invalid/p?application_name=a@b', 'pw')).toBe(
      'postgres://:pw@db.invalid/p?application_name=a@b',
    );
    expect(withPassword('postgres://ana:own@db.invalid/p', 'pw')).toBe(
      'postgres://ana:own@db.invalid/p',
    );
    expect(withPassword('postgres://ana@db.invalid/p', '')).toBe('postgres://ana@db.invalid/p');
    expect(withoutPassword('postgres://ana:pw@db.invalid/p?options=-c%20x&password=y')).toBe(
      'postgres://ana@db.invalid/p?options=-c+x',
    );
    expect(withoutPassword('postgres://ana:pw@db.invalid/p?options=-c%20x')).toBe(
      'postgres://ana@db.invalid/p?options=-c%20x',
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
