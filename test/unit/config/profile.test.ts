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

  it('removes a profile, and names the stored ones when there is no such profile', () => {
    const dir = mkdtempSync(join(tmpdir(), 'payouts-prof-'));
    try {
      const store = new ConfigStore(dir);
      store.saveProfile('a', { clientId: 'x' });
      store.saveProfile('b', { clientId: 'y' });
      expect(removeProfile(store, 'a')).toEqual({ profile: 'a', path: store.path });
      expect(() => removeProfile(store, 'a')).toThrow(/no profile "a" .*\(profiles: b\)/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
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
    );
    expect(view.client_secret).toEqual({ masked: '********WXYZ', source: 'environment' });
    const text = renderSettings(view);
    expect(text).toMatch(/Client-Secret\s+\*{8}WXYZ \(from environment\)/);
    expect(text).toMatch(/Base URL\s+https:\/\/pay\.example\.com \(from flag\)/);
    expect(text).toMatch(/Client-Id\s+cid \(from file\)/);
    expect(text).not.toContain('supersecret');
  });

  it('says what is not set', () => {
    const view = describeSettings({ profile: { value: 'x', source: 'flag' } }, '/c', []);
    expect(view).toMatchObject({ client_id: null, client_secret: null, base_url: null });
    expect(renderSettings(view)).toMatch(/Client-Secret\s+\(not set\)/);
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
