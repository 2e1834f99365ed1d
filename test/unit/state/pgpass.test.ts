import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  pgpassKeyOf,
  pgpassLookup,
  pgpassPassword,
  pgpassPath,
} from '../../../src/state/pg/pgpass.js';
import { tempHomesPerTest } from '../../helpers/cli.js';

// Issue 52, item 4: the history's password from ~/.pgpass, as libpq reads it, never from a
// command line.

const homes = tempHomesPerTest();

const KEY = { host: 'db.example.com', port: '5432', database: 'payouts', user: 'ana' };

describe('~/.pgpass', () => {
  it('gives the first matching line, with * and escaped : and \\ as libpq reads them', () => {
    const text = [
      '# comments and blank lines are skipped',
      '',
      'other.example.com:5432:payouts:ana:not-this',
      'db.example.com:5432:payouts:bob:not-this-either',
      'db.example.com:*:payouts:ana:p\\:ss\\\\w:rd',
      '*:*:*:*:too-late',
    ].join('\n');
    expect(pgpassLookup(text, KEY)).toBe('p:ss\\w:rd');
    expect(pgpassLookup(text, { ...KEY, user: 'carl' })).toBe('too-late');
    expect(pgpassLookup('db.example.com:5432:payouts\n', KEY)).toBeUndefined();
  });

  it('reads the key of a URL: its user, else PGUSER or USER; its database, else the user', () => {
    expect(pgpassKeyOf('postgres://ana@db.example.com/payouts?sslmode=verify-full', {})).toEqual(
      KEY,
    );
    expect(pgpassKeyOf('postgres://db.example.com:6543', { USER: 'ana' })).toEqual({
      ...KEY,
      port: '6543',
      database: 'ana',
    });
    expect(pgpassKeyOf('postgres://ana@/payouts?host=/run/pg', {})?.host).toBe('/run/pg');
  });

  it('finds the file from PGPASSFILE or HOME, and ignores one others can read, saying so', () => {
    const dir = homes().dir;
    const file = join(dir, '.pgpass');
    writeFileSync(file, 'db.example.com:5432:payouts:ana:from-file\n', { mode: 0o600 });
    expect(pgpassPath({ HOME: dir })).toBe(file);
    expect(pgpassPath({ HOME: dir, PGPASSFILE: '/x/pw' })).toBe('/x/pw');
    const url = 'postgres://ana@db.example.com/payouts?sslmode=verify-full';
    expect(pgpassPassword(url, { HOME: dir })).toEqual({ password: 'from-file' });
    chmodSync(file, 0o644);
    expect(pgpassPassword(url, { HOME: dir })).toEqual({
      warning: `the password file ${file} is not used: others can read it (libpq ignores it too): run \`chmod 600 ${file}\``,
    });
    expect(pgpassPassword(url, { HOME: join(dir, 'none') })).toEqual({});
  });
});
