import { describe, expect, it } from 'vitest';
import { requireComplete, resolveSettings } from '../../../src/config/settings.js';
import { CredentialsError } from '../../../src/errors.js';
import { FakeSecretStore } from '../../helpers/secret-store.js';

const SECRET = 'cs_live_W4kP';
const FILE = '/home/u/.config/payouts/config.json';

/** What requireComplete threw for these environment variables and stored profile. */
async function refusal(
  env: Record<string, string>,
  stored: { clientId?: string; clientSecret?: string } = {},
  profile?: string,
): Promise<Error> {
  const settings = await resolveSettings({
    flags: { profile, baseUrl: 'https://pay.example.com' },
    env,
    loadProfile: () => stored,
  });
  try {
    requireComplete(settings, FILE);
  } catch (e) {
    return e as Error;
  }
  throw new Error('accepted');
}

describe('requireComplete checks that the credentials can be sent', () => {
  it('names the environment variable, without the secret', async () => {
    const err = await refusal({ PAYOUTS_CLIENT_ID: 'id', PAYOUTS_CLIENT_SECRET: `${SECRET}\n` });
    expect(err).toBeInstanceOf(CredentialsError);
    expect(err.message).toBe(
      "the Client-Secret from PAYOUTS_CLIENT_SECRET ends with a line break (did `echo` add one? `printf '%s'` adds none): set PAYOUTS_CLIENT_SECRET to the value the service issued, and nothing else",
    );
  });

  it('names the profile and its file, with the command that stores it again', async () => {
    const err = await refusal({}, { clientId: 'id', clientSecret: `${SECRET}€` }, 'staging');
    expect(err).toBeInstanceOf(CredentialsError);
    expect(err.message).toBe(
      `the Client-Secret from profile "staging" in ${FILE} holds the character U+20AC, which cannot be sent in an HTTP header: store it again with \`payouts config set-credentials --profile staging\``,
    );
    expect(err.message).not.toContain(SECRET);
  });

  it('shows a Client-Id it refuses', async () => {
    const err = await refusal({ PAYOUTS_CLIENT_ID: 'id\r\n' }, { clientSecret: SECRET });
    expect(err.message).toMatch(/^the Client-Id "id\\r\\n" from PAYOUTS_CLIENT_ID ends with/);
  });

  it('accepts credentials that can be sent', async () => {
    const settings = await resolveSettings({
      flags: { baseUrl: 'https://pay.example.com' },
      env: { PAYOUTS_CLIENT_ID: 'id', PAYOUTS_CLIENT_SECRET: SECRET },
      loadProfile: () => undefined,
    });
    expect(requireComplete(settings).clientSecret.reveal()).toBe(SECRET);
  });
});

describe('a Client-Secret kept in the system keyring', () => {
  /** Resolves the settings of profile "ops", which says its secret is in `keyring`. */
  async function resolveWith(keyring: FakeSecretStore, env: Record<string, string> = {}) {
    let asked = 0;
    const settings = await resolveSettings({
      flags: { profile: 'ops', baseUrl: 'https://pay.example.com' },
      env,
      loadProfile: () => ({ clientId: 'id', secretIn: 'keyring' }),
      loadSecret: async (profile) => {
        asked += 1;
        return (await keyring.factory()).get(profile);
      },
    });
    return { settings, asked };
  }

  it('is read from the keyring entry of the profile', async () => {
    const keyring = new FakeSecretStore();
    keyring.entries.set('ops', SECRET);
    const { settings } = await resolveWith(keyring);
    expect(settings.clientSecret?.source).toBe('keyring');
    expect(requireComplete(settings).clientSecret.reveal()).toBe(SECRET);
  });

  it('gives way to PAYOUTS_CLIENT_SECRET, without asking the keyring', async () => {
    const keyring = new FakeSecretStore();
    keyring.unreachable = 'no D-Bus';
    const { settings, asked } = await resolveWith(keyring, { PAYOUTS_CLIENT_SECRET: 'env-s' });
    expect(asked).toBe(0);
    expect(settings.clientSecret?.source).toBe('environment');
    expect(settings.secretProblem).toBeUndefined();
  });

  it('is a credentials error naming the entry when the keyring has none', async () => {
    const { settings } = await resolveWith(new FakeSecretStore());
    const err = (() => {
      try {
        requireComplete(settings, FILE);
      } catch (e) {
        return e as Error;
      }
    })();
    expect(err).toBeInstanceOf(CredentialsError);
    expect(err?.message).toBe(
      'the Client-Secret of profile "ops" is in the system keyring, which has no entry for it (service "payouts", account "ops"): store it again with `payouts config set-credentials --profile ops`, or set PAYOUTS_CLIENT_SECRET',
    );
  });

  it('is a credentials error saying why when the keyring cannot be reached', async () => {
    const keyring = new FakeSecretStore();
    keyring.unreachable = 'no D-Bus session bus';
    const { settings } = await resolveWith(keyring);
    expect(() => requireComplete(settings, FILE)).toThrow(
      new CredentialsError(
        'the Client-Secret of profile "ops" is in the system keyring, which cannot be reached: no D-Bus session bus; store it again with `payouts config set-credentials --profile ops`, or set PAYOUTS_CLIENT_SECRET',
      ),
    );
  });

  it('names the keyring, not the file, when the secret it holds cannot be sent', async () => {
    const keyring = new FakeSecretStore();
    keyring.entries.set('ops', `${SECRET}\n`);
    const { settings } = await resolveWith(keyring);
    expect(() => requireComplete(settings, FILE)).toThrow(
      /^the Client-Secret from profile "ops" in the system keyring ends with a line break/,
    );
  });
});
