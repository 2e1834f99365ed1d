import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Secret } from '../../../src/api/secret.js';
import { ConfigStore } from '../../../src/config/store.js';
import { probeReference, verifyCredentials } from '../../../src/core/config/check.js';
import {
  checkProfileName,
  removeProfile,
  selectedProfile,
} from '../../../src/core/config/profile.js';
import { describeSettings, renderSettings } from '../../../src/core/config/show.js';
import {
  InvalidCredentialsError,
  NetworkError,
  NotFoundError,
  UsageError,
} from '../../../src/errors.js';
import { FakeSecretStore } from '../../helpers/secret-store.js';

describe('profiles', () => {
  it('picks --profile, then PAYOUTS_PROFILE, then "default"', () => {
    expect(selectedProfile('a', { PAYOUTS_PROFILE: 'b' })).toEqual({ value: 'a', source: 'flag' });
    expect(selectedProfile(undefined, { PAYOUTS_PROFILE: 'b' })).toEqual({
      value: 'b',
      source: 'environment',
    });
    expect(selectedProfile(undefined, {})).toEqual({ value: 'default', source: 'default' });
  });

  it('refuses names that are not plain words', () => {
    for (const bad of ['__proto__', '', 'a b', '../x', 'x'.repeat(65)]) {
      expect(() => checkProfileName(bad, '--profile')).toThrow(UsageError);
    }
    expect(checkProfileName('prod.eu-1_b', '--profile')).toBe('prod.eu-1_b');
  });

  /** Runs `body` with a config store in a temp folder. */
  async function withStore(body: (store: ConfigStore) => Promise<void>): Promise<void> {
    const dir = mkdtempSync(join(tmpdir(), 'payouts-prof-'));
    try {
      await body(new ConfigStore(dir));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it('removes a profile, and names the stored ones when there is no such profile', () =>
    withStore(async (store) => {
      const keyring = new FakeSecretStore();
      const warnings: string[] = [];
      const secrets = { open: keyring.factory, warn: (l: string) => warnings.push(l) };
      store.saveProfile('a', { clientId: 'x' });
      store.saveProfile('b', { clientId: 'y' });
      expect(await removeProfile(store, 'a', secrets)).toEqual({
        profile: 'a',
        path: store.path,
        from_file: true,
        from_keyring: false,
      });
      await expect(removeProfile(store, 'a', secrets)).rejects.toThrow(
        /no profile "a" .*\(profiles: b\)/,
      );
      expect(warnings).toEqual([]);
    }));

  it('removes the secret from the keyring and the profile from the file', () =>
    withStore(async (store) => {
      const keyring = new FakeSecretStore();
      keyring.entries.set('a', 'kept-secret');
      keyring.entries.set('b', 'other-secret');
      store.saveProfile('a', { clientId: 'x', secretIn: 'keyring' });
      const removed = await removeProfile(store, 'a', { open: keyring.factory, warn: () => {} });
      expect(removed).toMatchObject({ from_file: true, from_keyring: true });
      expect([...keyring.entries.keys()]).toEqual(['b']);
      expect(store.profile('a')).toBeUndefined();
    }));

  it('removes a keyring entry left without its profile', () =>
    withStore(async (store) => {
      const keyring = new FakeSecretStore();
      keyring.entries.set('orphan', 's');
      const removed = await removeProfile(store, 'orphan', {
        open: keyring.factory,
        warn: () => {},
      });
      expect(removed).toMatchObject({ from_file: false, from_keyring: true });
    }));

  it('warns that the secret remains when the keyring the profile names cannot be reached', () =>
    withStore(async (store) => {
      const keyring = new FakeSecretStore();
      keyring.unreachable = 'no D-Bus';
      const warnings: string[] = [];
      const secrets = { open: keyring.factory, warn: (l: string) => warnings.push(l) };
      store.saveProfile('a', { clientId: 'x', secretIn: 'keyring' });
      store.saveProfile('b', { clientId: 'y', clientSecret: 'file-secret' });
      expect(await removeProfile(store, 'a', secrets)).toMatchObject({ from_file: true });
      await removeProfile(store, 'b', secrets);
      // Profile b kept its secret in the file: an unreachable keyring is not worth a word.
      expect(warnings).toEqual([
        'the Client-Secret of profile "a" remains in the system keyring (service "payouts", account "a"), which cannot be reached: no D-Bus; delete it with the keyring\'s own tool',
      ]);
    }));
});

describe('describeSettings', () => {
  it('masks the secret to its last 4 characters and keeps each origin', () => {
    const view = describeSettings(
      {
        profile: { value: 'default', source: 'default' },
        clientId: { value: 'cid', source: 'file' },
        clientSecret: { value: new Secret('supersecretvalue-WXYZ'), source: 'environment' },
        baseUrl: { value: 'https://pay.example.com', source: 'flag' },
      },
      '/cfg/config.json',
      ['default'],
      '/st/payouts/state.db',
    );
    expect(view.client_secret).toEqual({ masked: '********WXYZ', source: 'environment' });
    const text = renderSettings(view);
    // Real paths and plain origins, never "(default)" or "(the state folder)".
    expect(text).toMatch(
      /^Profile\s+default \(used when neither --profile nor PAYOUTS_PROFILE names one\)$/m,
    );
    expect(text).toMatch(/^State\s+\/st\/payouts\/state\.db \(this machine's history: /m);
    expect(text).not.toContain('(default)');
    expect(text).toMatch(/Client-Secret\s+\*{8}WXYZ \(from environment\)/);
    expect(text).toMatch(/Base URL\s+https:\/\/pay\.example\.com \(from flag\)/);
    expect(text).toMatch(/Client-Id\s+cid \(from file\)/);
    expect(text).not.toContain('supersecret');
  });

  it('says what is not set', () => {
    const view = describeSettings({ profile: { value: 'x', source: 'flag' } }, '/c', [], '/s');
    expect(view).toMatchObject({ client_id: null, client_secret: null, base_url: null });
    expect(renderSettings(view)).toMatch(/Client-Secret\s+\(not set\)/);
  });

  it('names the keyring entry the secret came from, or why it could not be read', () => {
    const profile = { value: 'ops', source: 'flag' } as const;
    const read = describeSettings(
      { profile, clientSecret: { value: new Secret('from-the-keyring-WXYZ'), source: 'keyring' } },
      '/c',
      ['ops'],
      '/s',
    );
    expect(renderSettings(read)).toMatch(
      /Client-Secret\s+\*{8}WXYZ \(from the system keyring, service "payouts", account "ops"\)/,
    );
    const unread = describeSettings(
      { profile, secretProblem: 'it is locked' },
      '/c',
      ['ops'],
      '/s',
    );
    expect(unread).toMatchObject({ client_secret: null, client_secret_problem: 'it is locked' });
    expect(renderSettings(unread)).toMatch(/Client-Secret\s+\(not readable: it is locked\)/);
  });
});

describe('verifyCredentials', () => {
  const reader = (error: Error | undefined) => ({
    asked: [] as string[],
    async getPayout(ref: string) {
      this.asked.push(ref);
      if (error) throw error;
      return { reference_id: ref, status: 'success' };
    },
  });

  it('takes "Payout not found" for a random reference as accepted credentials', async () => {
    const r = reader(new NotFoundError('x'));
    const result = await verifyCredentials(r, { probe: probeReference('abcd') });
    expect(result).toEqual({
      accepted: true,
      probe: 'payouts-config-check-abcd',
      answer: 'not_found',
    });
    expect(r.asked).toEqual(['payouts-config-check-abcd']);
  });

  it('uses a fresh random probe each time', () => {
    expect(probeReference()).toMatch(/^payouts-config-check-[0-9a-f]{16}$/);
    expect(probeReference()).not.toBe(probeReference());
  });

  it('throws a rejection or an unreachable service', async () => {
    await expect(
      verifyCredentials(reader(new InvalidCredentialsError('no', 401))),
    ).rejects.toBeInstanceOf(InvalidCredentialsError);
    const quick = {
      maxAttempts: 2,
      baseDelayMs: 1,
      maxDelayMs: 1,
      maxTotalMs: 100,
      maxRetryAfterMs: 1,
    };
    await expect(
      verifyCredentials(reader(new NetworkError('down', false, 'ECONNREFUSED')), { retry: quick }),
    ).rejects.toBeInstanceOf(NetworkError);
  });
});
