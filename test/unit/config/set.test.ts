import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigStore } from '../../../src/config/store.js';
import { setProfileSetting } from '../../../src/core/config/set.js';
import { tempHomesPerTest } from '../../helpers/cli.js';

// Issue 52, item 4: `config set state_url` takes no password on its command line; a person at
// a terminal is asked for it, and it is kept in the 0600 config file.

const homes = tempHomesPerTest();

/** A config store in a fresh folder. */
function store(): ConfigStore {
  return new ConfigStore(join(homes().dir, 'payouts'));
}

const URL_ = 'postgres://ana@db.example.com/payouts?sslmode=verify-full';

describe('config set state_url', () => {
  it('asks a person at a terminal for the password and keeps it, never showing it', async () => {
    const s = store();
    const asked: string[] = [];
    const { set, changed } = await setProfileSetting(
      s,
      'default',
      { key: 'state_url', value: URL_ },
      {
        askPassword: async (q) => {
          asked.push(q);
          return 'p@ss';
        },
      },
    );
    expect(asked).toEqual([
      `Password for ${URL_} (not shown; empty: none kept, PGPASSWORD or ~/.pgpass give it): `,
    ]);
    expect(set.value).toBe('postgres://ana:***@db.example.com/payouts?sslmode=verify-full');
    expect(changed).toBe(true);
    expect(s.profile('default')?.stateUrl).toBe(
      'postgres://ana:p%40ss@db.example.com/payouts?sslmode=verify-full',
    );
    expect(readFileSync(s.path, 'utf8')).toContain('ana:p%40ss@');
  });

  it('keeps no password when the answer is empty, or when no one is at a terminal', async () => {
    const s = store();
    await setProfileSetting(
      s,
      'a',
      { key: 'state_url', value: URL_ },
      { askPassword: async () => '' },
    );
    await setProfileSetting(s, 'b', { key: 'state_url', value: URL_ });
    expect([s.profile('a')?.stateUrl, s.profile('b')?.stateUrl]).toEqual([URL_, URL_]);
  });

  it('refuses a URL that carries a password, before asking anything', async () => {
    const s = store();
    const asked: string[] = [];
    await expect(
      setProfileSetting(
        s,
        'default',
        { key: 'state_url', value: 'postgres://ana:s3cret@db.example.com/p?sslmode=disable' },
        {
          askPassword: async (q) => {
            asked.push(q);
            return '';
          },
        },
      ),
    ).rejects.toThrow(
      /^state_url "postgres:\/\/ana:\*\*\*@db\.example\.com\/p\?sslmode=disable" carries a password on the command line/,
    );
    expect(asked).toEqual([]);
    expect(s.profile('default')).toBeUndefined();
  });
});
