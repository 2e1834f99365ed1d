import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SANDBOX_CREDENTIALS } from '../../src/sandbox/index.js';
import { parseJsonStdout, tempHome } from '../helpers/cli.js';
import { FakeClock, type MainOptions, type MainResult, runMain } from '../helpers/main.js';
import { testService } from '../helpers/sandbox.js';
import { FakeSecretStore } from '../helpers/secret-store.js';

const SECRET = SANDBOX_CREDENTIALS.clientSecret;

let home: ReturnType<typeof tempHome>;
let keyring: FakeSecretStore;
let svc: Awaited<ReturnType<typeof testService>>;
beforeAll(async () => {
  svc = await testService();
});
afterAll(async () => {
  await svc.close();
});
beforeEach(() => {
  home = tempHome();
  keyring = new FakeSecretStore();
});
afterEach(() => home.cleanup());

/** Runs `payouts ARGS` in process with the fake keyring; retry waits take no real time. */
function run(args: string[], opts: MainOptions = {}): Promise<MainResult> {
  return runMain(args, {
    clock: new FakeClock(),
    env: home.env,
    secretStore: keyring.factory,
    ...opts,
  });
}

/** Stores the sandbox's credentials through the CLI, the secret on stdin. */
function setCredentials(args: string[] = [], opts: MainOptions = {}): Promise<MainResult> {
  return run(
    [
      'config',
      'set-credentials',
      '--client-id',
      SANDBOX_CREDENTIALS.clientId,
      '--client-secret-stdin',
      '--base-url',
      svc.sandbox.baseUrl,
      ...args,
    ],
    { stdin: SECRET, ...opts },
  );
}

/** The config file, parsed. */
function storedProfiles(): Record<string, Record<string, string>> {
  const path = join(home.env.XDG_CONFIG_HOME as string, 'payouts', 'config.json');
  return JSON.parse(readFileSync(path, 'utf8')).profiles;
}

describe('the Client-Secret in a keyring (a fake standing in for it)', () => {
  it('set-credentials stores it in the keyring and only a marker in the file', async () => {
    const r = await setCredentials(['--profile', 'ops']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      'Client-Secret stored in the system keyring (service "payouts", account "ops")',
    );
    expect(keyring.entries.get('ops')).toBe(SECRET);
    expect(storedProfiles().ops).toEqual({
      clientId: SANDBOX_CREDENTIALS.clientId,
      secretIn: 'keyring',
      baseUrl: svc.sandbox.baseUrl,
    });
    expect(r.stdout + r.stderr).not.toContain(SECRET);
  });

  it('config show says the secret is in the keyring, masked', async () => {
    await setCredentials();
    const r = await run(['config', 'show']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /Client-Secret\s+\*+cret \(from the system keyring, service "payouts", account "default"\)/,
    );
    const j = parseJsonStdout<{ client_secret: unknown }>(await run(['config', 'show', '--json']));
    expect(j.client_secret).toEqual({ masked: expect.stringMatching(/cret$/), source: 'keyring' });
    expect(r.stdout).not.toContain(SECRET);
  });

  it('status and config check send the secret read from the keyring', async () => {
    await setCredentials();
    const check = await run(['config', 'check']);
    expect(check.code).toBe(0);
    expect(check.stdout).toContain('Credentials accepted');
    const status = await run(['status', 'NO-SUCH-REF', '--json']);
    // "not found" is an answer only accepted credentials get.
    expect(status.code).toBe(6);
  });

  it('PAYOUTS_CLIENT_SECRET wins over the keyring', async () => {
    await setCredentials();
    const r = await run(['config', 'check'], {
      env: { ...home.env, PAYOUTS_CLIENT_SECRET: 'not-the-secret' },
    });
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/rejected the credentials/);
  });

  it('a missing keyring entry is exit 3 naming the entry and the fix', async () => {
    await setCredentials();
    keyring.entries.clear();
    const r = await run(['status', 'R1']);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(
      'error: the Client-Secret of profile "default" is in the system keyring, which has no entry for it (service "payouts", account "default"): store it again with `payouts config set-credentials`, or set PAYOUTS_CLIENT_SECRET',
    );
  });

  it('a keyring that went away is exit 3 saying why; config show says so and exits 0', async () => {
    await setCredentials();
    keyring.unreachable = 'the keyring is locked';
    const r = await run(['config', 'check']);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(
      'error: the Client-Secret of profile "default" is in the system keyring, which cannot be reached: the keyring is locked; store it again with `payouts config set-credentials`',
    );
    const show = await run(['config', 'show']);
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(/Client-Secret\s+\(not readable: the Client-Secret of profile/);
  });

  it('config remove deletes the keyring entry and the profile', async () => {
    await setCredentials();
    await setCredentials(['--profile', 'other']);
    const r = await run(['config', 'remove']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /Removed profile "default" from \S+config\.json and the system keyring/,
    );
    expect([...keyring.entries.keys()]).toEqual(['other']);
    expect(Object.keys(storedProfiles())).toEqual(['other']);
  });

  it('--no-keyring stores the secret in the file and leaves the keyring alone', async () => {
    const r = await setCredentials(['--no-keyring']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/Client-Secret stored in \S+config\.json \(--no-keyring\)/);
    expect(keyring.entries.size).toBe(0);
    expect(storedProfiles().default?.clientSecret).toBe(SECRET);
    expect(parseJsonStdout(await setCredentials(['--no-keyring', '--json']))).toMatchObject({
      secret_in: 'file',
      secret_note: '--no-keyring',
    });
  });
});

describe('no system keyring on this machine: the config file instead', () => {
  /** Asserts that the default profile's secret went to the 0600 config file. */
  function expectInFile(): void {
    const path = join(home.env.XDG_CONFIG_HOME as string, 'payouts', 'config.json');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(storedProfiles().default).toEqual({
      clientId: SANDBOX_CREDENTIALS.clientId,
      clientSecret: SECRET,
      baseUrl: svc.sandbox.baseUrl,
    });
  }

  it('without a D-Bus session bus, says so and stores in the 0600 file', async () => {
    const r = await setCredentials([], { secretStore: undefined });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /^Client-Secret stored in \S+\/payouts\/config\.json \(readable by you only\): no system keyring can be used here: no desktop session here to reach a keyring through \(neither DBUS_SESSION_BUS_ADDRESS nor XDG_RUNTIME_DIR is set\), as over SSH or in a container\nTo keep it in a keyring instead, run `payouts config set-credentials` again where one runs /m,
    );
    expectInFile();
    const check = await run(['config', 'check'], { secretStore: undefined });
    expect(check.code).toBe(0);
  });

  describe.runIf(process.platform === 'linux')('with a session bus that is not there', () => {
    let saved: string | undefined;
    let bus: string;
    beforeEach(() => {
      // The native library reads the process environment itself: point it nowhere too.
      saved = process.env.DBUS_SESSION_BUS_ADDRESS;
      bus = `unix:path=${join(home.dir, 'no-bus')}`;
      process.env.DBUS_SESSION_BUS_ADDRESS = bus;
    });
    afterEach(() => {
      if (saved === undefined) delete process.env.DBUS_SESSION_BUS_ADDRESS;
      else process.env.DBUS_SESSION_BUS_ADDRESS = saved;
    });

    it('the real keyring library fails, and the file is used with its reason', async () => {
      const r = await setCredentials([], {
        secretStore: undefined,
        env: { ...home.env, DBUS_SESSION_BUS_ADDRESS: bus },
      });
      expect(r.code).toBe(0);
      expect(r.stdout).toContain('(readable by you only): no system keyring can be used here: ');
      expect(r.stdout).toContain(join(home.dir, 'no-bus'));
      expectInFile();
    });
  });
});
