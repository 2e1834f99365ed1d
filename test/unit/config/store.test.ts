import { chmodSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigStore } from '../../../src/config/store.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A fresh config folder that does not exist yet. */
function freshDir(): string {
  const base = mkdtempSync(join(tmpdir(), 'payouts-store-'));
  dirs.push(base);
  return join(base, 'config', 'payouts');
}

describe('ConfigStore', () => {
  it('keeps the file 0600 inside a 0700 folder', () => {
    const dir = freshDir();
    const store = new ConfigStore(dir);
    store.saveProfile('default', { clientId: 'id', clientSecret: 'secret' });
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(store.path).mode & 0o777).toBe(0o600);
  });

  it('tightens a folder that was created too open', () => {
    const dir = freshDir();
    new ConfigStore(dir);
    // Simulate a folder someone loosened, then open the store again.
    chmodSync(dir, 0o755);
    new ConfigStore(dir);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
  });

  it('merges saves into a profile and removes profiles', () => {
    const store = new ConfigStore(freshDir());
    store.saveProfile('p', { clientId: 'a', baseUrl: 'https://x.example' });
    store.saveProfile('p', { clientId: 'b', clientSecret: 's' });
    expect(store.profile('p')).toEqual({
      clientId: 'b',
      clientSecret: 's',
      baseUrl: 'https://x.example',
    });
    expect(store.profileNames()).toEqual(['p']);
    expect(store.removeProfile('p')).toBe(true);
    expect(store.removeProfile('p')).toBe(false);
    expect(store.profile('p')).toBeUndefined();
  });

  it('does not mistake Object.prototype members for profiles', () => {
    const store = new ConfigStore(freshDir());
    expect(store.profile('constructor')).toBeUndefined();
    expect(store.removeProfile('toString')).toBe(false);
  });
});
