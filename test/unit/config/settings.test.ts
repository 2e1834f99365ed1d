import { describe, expect, it } from 'vitest';
import { requireComplete, resolveSettings } from '../../../src/config/settings.js';
import { CredentialsError } from '../../../src/errors.js';

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
