import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigStore } from '../../../src/config/store.js';
import { CredentialsError, UsageError } from '../../../src/errors.js';

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

  it('removing a setting no one stored writes nothing: no empty profile appears', () => {
    const store = new ConfigStore(freshDir());
    expect(store.saveProfile('slow', { quietTime: undefined })).toBe(false);
    expect(store.profileNames()).toEqual([]);
    expect(store.saveProfile('slow', { quietTime: 120 })).toBe(true);
    expect(store.saveProfile('slow', { quietTime: 120 })).toBe(false);
    expect(store.saveProfile('slow', { quietTime: undefined })).toBe(true);
    expect(store.profile('slow')).toEqual({});
  });

  it('does not mistake Object.prototype members for profiles', () => {
    const store = new ConfigStore(freshDir());
    expect(store.profile('constructor')).toBeUndefined();
    expect(store.removeProfile('toString')).toBe(false);
  });

  it('writes the file it names', () => {
    const store = new ConfigStore(freshDir());
    store.saveProfile('p', { clientId: 'written-id' });
    expect(readFileSync(store.path, 'utf8')).toContain('written-id');
  });
});

/** A config folder holding `text` as its config file, at `mode`. */
function dirWithFile(text: string, mode = 0o600): { dir: string; file: string } {
  const dir = freshDir();
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, 'config.json');
  writeFileSync(file, text, { mode });
  chmodSync(file, mode);
  return { dir, file };
}

/** What opening the store and reading a profile threw. */
function openError(dir: string): Error {
  try {
    new ConfigStore(dir).profile('default');
  } catch (e) {
    return e as Error;
  }
  throw new Error('no error');
}

describe('ConfigStore with a config file that is not valid JSON', () => {
  const SECRET = 'cs_live_Q7rT';

  it.each([
    // A missing comma: V8 names the position.
    [
      '{\n  "profiles": {\n    "default": {\n      "clientSecret": "cs_live_Q7rT"\n      "clientId": "id"\n',
      5,
      7,
    ],
    // A bare word: V8 names no position and quotes the text instead.
    ['{\n  "profiles": {\n    "default": { "clientSecret": cs_live_Q7rT }\n  }\n}\n', 3, 34],
    // Cut short.
    ['{"profiles": {"default": {"clientSecret": "cs_live_Q7rT"\n}', 2, 2],
  ])('names the file and the line, and quotes nothing of it (%#)', (text, line, column) => {
    const { dir, file } = dirWithFile(text);
    const err = openError(dir);
    expect(err).toBeInstanceOf(UsageError);
    expect(err.message).toBe(
      `the config file ${file} is not valid JSON (line ${line}, column ${column}): correct it in an editor, or move it away and store the credentials again with \`payouts config set-credentials\``,
    );
    expect(err.message).not.toContain(SECRET);
  });
});

describe('ConfigStore permission warnings', () => {
  it('warns about a config file other users can read, with the fix', () => {
    const { dir, file } = dirWithFile('{"profiles":{}}', 0o644);
    const store = new ConfigStore(dir);
    expect(store.warnings).toEqual([
      `the config file ${file} holds credentials and is open to other users (mode 0644): run \`chmod 600 ${file}\``,
    ]);
  });

  it('gives no warning for a 0600 file, or when there is no file yet', () => {
    expect(new ConfigStore(dirWithFile('{"profiles":{}}').dir).warnings).toEqual([]);
    expect(new ConfigStore(freshDir()).warnings).toEqual([]);
  });
});

describe('ConfigStore trusts only what the user owns (issue 52)', () => {
  /** Tests that plant another user's files need root to give them away. */
  const asRoot = process.getuid?.() === 0;
  const OTHER = 65534;

  it('refuses a config file others can change, a link and a FIFO, without blocking (exit 3)', () => {
    const { dir, file } = dirWithFile('{"profiles":{}}', 0o666);
    let err = openError(dir);
    expect(err).toBeInstanceOf(CredentialsError);
    expect(err.message).toBe(
      `the config file ${file} can be changed by other users (mode 0666): payouts takes credentials and the service's URL only from a file no one else can change: run \`chmod 600 ${file}\`, check what it holds with \`payouts config show\`, then run again`,
    );
    rmSync(file);
    const elsewhere = join(dir, '..', 'theirs.json');
    writeFileSync(elsewhere, '{"profiles":{}}', { mode: 0o600 });
    symlinkSync(elsewhere, file);
    err = openError(dir);
    expect(err.message).toMatch(/^the config file .*config\.json is a symbolic link: .*remove it/);
    rmSync(file);
    execFileSync('mkfifo', [file]);
    expect(openError(dir).message).toMatch(/is a named pipe \(FIFO\), not a file/);
  });

  it('refuses a config folder others can change, before reading it', () => {
    const { dir } = dirWithFile('{"profiles":{}}');
    chmodSync(dir, 0o777);
    const err = openError(dir);
    expect(err).toBeInstanceOf(CredentialsError);
    expect(err.message).toBe(
      `the config folder ${dir} can be changed by other users (mode 0777): payouts takes credentials and the service's URL only from a folder no one else can change: run \`chmod 700 ${dir}\`, check what it holds with \`payouts config show\`, then run again`,
    );
    expect(statSync(dir).mode & 0o777).toBe(0o777);
  });

  it.skipIf(!asRoot)("refuses another user's config folder or file, saying whose it is", () => {
    const { dir, file } = dirWithFile('{"profiles":{"default":{"baseUrl":"https://x.invalid"}}}');
    chownSync(file, OTHER, OTHER);
    expect(openError(dir).message).toMatch(
      new RegExp(
        `^the config file ${file} belongs to (nobody \\()?uid 65534\\)?, not to you: .*remove it \\(rm ${file}\\)`,
      ),
    );
    chownSync(file, 0, 0);
    chownSync(dir, OTHER, OTHER);
    const err = openError(dir);
    expect(err).toBeInstanceOf(CredentialsError);
    expect(err.message).toMatch(
      /^the config folder .* belongs to (nobody \()?uid 65534\)?, not to you: .*move it aside \(mv .*\.not-mine\) .*or set XDG_CONFIG_HOME/,
    );
  });
});
