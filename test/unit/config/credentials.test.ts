import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigStore } from '../../../src/config/store.js';
import {
  checkClientId,
  checkClientSecret,
  collectCredentials,
  saveCredentials,
  secretStoredLine,
  trimOneNewline,
} from '../../../src/core/config/credentials.js';
import { CredentialsError, UsageError } from '../../../src/errors.js';
import { FakeSecretStore } from '../../helpers/secret-store.js';
import { memoryOutput } from '../status/output-helper.js';

/** A readable holding `text`. */
function stdinOf(text: string): PassThrough {
  const s = new PassThrough();
  s.end(text);
  return s;
}

const SECRET = 'cs_live_9f8e7d6c5b4a';

describe('collectCredentials without a terminal', () => {
  it('takes the id from the flag and the secret from stdin, less one trailing newline', async () => {
    const m = memoryOutput();
    const creds = await collectCredentials(
      { clientId: 'cid', secretFromStdin: true, baseUrl: 'https://pay.example.com/' },
      { output: m.output, stdin: stdinOf(`${SECRET}\n`) },
    );
    expect(creds.clientId).toBe('cid');
    expect(creds.clientSecret.reveal()).toBe(SECRET);
    expect(creds.baseUrl).toBe('https://pay.example.com');
  });

  it('explains the flags when they are missing', async () => {
    const m = memoryOutput();
    for (const flags of [{}, { clientId: 'x' }, { secretFromStdin: true }]) {
      const err = await collectCredentials(flags, { output: m.output, stdin: stdinOf('s') }).catch(
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(UsageError);
      expect(String((err as Error).message)).toMatch(/--client-id ID .*--client-secret-stdin/s);
    }
  });

  it('refuses plain http to a remote host before reading the secret', async () => {
    const m = memoryOutput();
    const stdin = stdinOf(SECRET);
    await expect(
      collectCredentials(
        { clientId: 'cid', secretFromStdin: true, baseUrl: 'http://x.invalid' },
        { output: m.output, stdin },
      ),
    ).rejects.toThrow(/plain http/);
    expect(stdin.readableLength).toBeGreaterThan(0);
  });

  it('refuses a secret that cannot be a header value, before storing it and without quoting it', async () => {
    const m = memoryOutput();
    const cases: Array<[string, RegExp]> = [
      ['\n', /is empty/],
      ['', /is empty/],
      ['qz\ncd\n', /holds a line break/],
      ['qzcd\n\n', /ends with a line break/],
      ['qzcd€\n', /holds the character U\+20AC/],
      [' qzcd', /starts with a space/],
    ];
    for (const [input, reason] of cases) {
      const err = await collectCredentials(
        { clientId: 'cid', secretFromStdin: true },
        { output: m.output, stdin: stdinOf(input) },
      ).catch((e: unknown) => e as Error);
      expect(err).toBeInstanceOf(CredentialsError);
      expect((err as Error).message).toMatch(/^the Client-Secret from standard input /);
      expect((err as Error).message).toMatch(reason);
      expect((err as Error).message).not.toContain('qz');
    }
  });

  it('refuses a --client-id that cannot be a header value, naming it', async () => {
    const err = await collectCredentials(
      { clientId: 'c€d', secretFromStdin: true },
      { output: memoryOutput().output, stdin: stdinOf(SECRET) },
    ).catch((e: unknown) => e as Error);
    expect(err).toBeInstanceOf(CredentialsError);
    expect((err as Error).message).toMatch(
      /^the Client-Id "c€d" from --client-id holds the character U\+20AC.*: nothing was stored$/,
    );
  });
});

describe('collectCredentials on a terminal', () => {
  it('asks for id, hidden secret and base URL', async () => {
    const m = memoryOutput({ tty: true });
    const pending = collectCredentials({}, { output: m.output, stdin: m.stdin });
    // Answer each prompt once it has been shown.
    const answers = ['my-id', SECRET, 'https://pay.example.com'];
    const prompts = ['Client-Id: ', 'Client-Secret (not shown): ', 'Base URL'];
    for (const [i, answer] of answers.entries()) {
      await waitFor(() => m.stderr().includes(prompts[i] as string));
      m.stdin.write(`${answer}\n`);
    }
    const creds = await pending;
    expect(creds).toMatchObject({ clientId: 'my-id', baseUrl: 'https://pay.example.com' });
    expect(creds.clientSecret.reveal()).toBe(SECRET);
    expect(m.stderr()).not.toContain(SECRET);
  });

  it('offers the stored Client-Id as the default and skips the base URL a profile has', async () => {
    const m = memoryOutput({ tty: true });
    const pending = collectCredentials(
      {},
      {
        output: m.output,
        stdin: m.stdin,
        existing: { clientId: 'old-id', baseUrl: 'https://a.example' },
      },
    );
    await waitFor(() => m.stderr().includes('Client-Id [old-id]: '));
    m.stdin.write('\n');
    await waitFor(() => m.stderr().includes('Client-Secret'));
    m.stdin.write(`${SECRET}\n`);
    const creds = await pending;
    expect(creds.clientId).toBe('old-id');
    expect(creds.baseUrl).toBeUndefined();
    expect(m.stderr()).not.toContain('Base URL');
  });
});

/**
 * Waits until a condition holds (the prompts are written asynchronously), for as long as a
 * busy machine may take: a bound in time, not in turns of a 5 ms timer.
 */
async function waitFor(cond: () => boolean): Promise<void> {
  const until = Date.now() + 20_000;
  while (!cond() && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
  if (!cond()) throw new Error('condition not met');
}

describe('checks', () => {
  it('trims exactly one trailing newline', () => {
    expect(trimOneNewline('a\n\n')).toBe('a\n');
    expect(trimOneNewline('a\r\n')).toBe('a');
    expect(trimOneNewline('a ')).toBe('a ');
  });

  it('refuses ids and secrets that cannot be a header value', () => {
    expect(() => checkClientId('  ', 'x')).toThrow(CredentialsError);
    expect(() => checkClientId('a\nb', 'x')).toThrow(CredentialsError);
    expect(checkClientId(' id ', 'x')).toBe('id');
    expect(checkClientId('a\tb', 'x')).toBe('a\tb');
    expect(() => checkClientSecret('a\u0000b', 'x')).toThrow(CredentialsError);
    expect(checkClientSecret('a b', 'x').reveal()).toBe('a b');
  });
});

describe('saveCredentials', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  /** A fresh config store in a temp folder. */
  function tempStore(): ConfigStore {
    const dir = mkdtempSync(join(tmpdir(), 'payouts-cred-'));
    dirs.push(dir);
    return new ConfigStore(dir);
  }

  /** Credentials as `--client-id cid --client-secret-stdin` would collect them. */
  function creds(secret = SECRET) {
    return collectCredentials(
      { clientId: 'cid', secretFromStdin: true },
      { output: memoryOutput().output, stdin: stdinOf(secret) },
    );
  }

  it('puts the secret in the keyring and only a marker in the file, keeping the base URL', async () => {
    const store = tempStore();
    store.saveProfile('p', { baseUrl: 'https://keep.example', clientSecret: 'old-file-secret' });
    const keyring = new FakeSecretStore();
    const { saved, warnings } = await saveCredentials(store, 'p', await creds(), {
      useKeyring: true,
      open: keyring.factory,
    });
    expect(saved).toEqual({
      profile: 'p',
      path: store.path,
      client_id: 'cid',
      base_url: 'https://keep.example',
      secret_in: 'keyring',
      secret_note: null,
    });
    expect(warnings).toEqual([]);
    expect(keyring.entries.get('p')).toBe(SECRET);
    expect(store.profile('p')).toEqual({
      clientId: 'cid',
      secretIn: 'keyring',
      baseUrl: 'https://keep.example',
    });
    const file = readFileSync(store.path, 'utf8');
    expect(file).not.toContain(SECRET);
    expect(file).not.toContain('old-file-secret');
    expect(secretStoredLine(saved)).toBe(
      'Client-Secret stored in the system keyring (service "payouts", account "p")',
    );
  });

  it('falls back to the file when the keyring cannot be reached, and says why', async () => {
    const store = tempStore();
    const keyring = new FakeSecretStore();
    keyring.unreachable = 'no D-Bus';
    const { saved } = await saveCredentials(store, 'p', await creds(), {
      useKeyring: true,
      open: keyring.factory,
    });
    expect(saved).toMatchObject({
      secret_in: 'file',
      secret_note: 'no system keyring can be used here: no D-Bus',
    });
    expect(JSON.stringify(saved)).not.toContain(SECRET);
    expect(store.profile('p')).toEqual({ clientId: 'cid', clientSecret: SECRET });
    expect(secretStoredLine(saved)).toBe(
      `Client-Secret stored in ${store.path} (readable by you only): no system keyring can be used here: no D-Bus\n` +
        'To keep it in a keyring instead, run `payouts --profile p config set-credentials` again where one runs (a desktop login with GNOME Keyring, KWallet or KeePassXC; macOS; Windows)',
    );
  });

  it('with --no-keyring stores in the file and deletes the entry the profile had', async () => {
    const store = tempStore();
    const keyring = new FakeSecretStore();
    const target = { useKeyring: true, open: keyring.factory };
    await saveCredentials(store, 'p', await creds('first-secret'), target);
    const { saved, warnings } = await saveCredentials(store, 'p', await creds(), {
      ...target,
      useKeyring: false,
    });
    expect(saved).toMatchObject({ secret_in: 'file', secret_note: '--no-keyring' });
    expect(warnings).toEqual([]);
    expect(keyring.entries.size).toBe(0);
    expect(store.profile('p')).toEqual({ clientId: 'cid', clientSecret: SECRET });
  });

  it('warns that the old keyring entry may remain when the keyring went away', async () => {
    const store = tempStore();
    const keyring = new FakeSecretStore();
    await saveCredentials(store, 'p', await creds('first-secret'), {
      useKeyring: true,
      open: keyring.factory,
    });
    keyring.unreachable = 'locked';
    const { saved, warnings } = await saveCredentials(store, 'p', await creds(), {
      useKeyring: true,
      open: keyring.factory,
    });
    expect(saved.secret_in).toBe('file');
    expect(warnings).toEqual([
      'the previous Client-Secret of profile "p" may remain in the system keyring (service "payouts", account "p"), which cannot be reached: locked',
    ]);
    expect(store.profile('p')?.secretIn).toBeUndefined();
  });
});

describe('collectCredentials edge cases', () => {
  it('turns a prompt closed without an answer (Ctrl-D) into a usage error', async () => {
    const m = memoryOutput({ tty: true });
    const pending = collectCredentials({}, { output: m.output, stdin: m.stdin });
    await waitFor(() => m.stderr().includes('Client-Id: '));
    m.stdin.end();
    await expect(pending).rejects.toThrow(/no answer given: nothing was stored/);
  });

  it('asks without echo when --client-secret-stdin is given but stdin is a terminal', async () => {
    const m = memoryOutput({ tty: true });
    const pending = collectCredentials(
      { clientId: 'cid', secretFromStdin: true },
      { output: m.output, stdin: m.stdin },
    );
    await waitFor(() => m.stderr().includes('Client-Secret (not shown): '));
    m.stdin.write(`${SECRET}\n`);
    expect((await pending).clientSecret.reveal()).toBe(SECRET);
    expect(m.stderr()).not.toContain(SECRET);
    expect(m.stderr()).not.toContain('Base URL');
  });
});
