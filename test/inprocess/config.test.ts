import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { SANDBOX_CREDENTIALS } from '../../src/sandbox/index.js';
import { parseJsonStdout, tempHome } from '../helpers/cli.js';
import { FakeClock, type MainOptions, type MainResult, runMain } from '../helpers/main.js';
import { errorEnvelope, sendJson, startServer } from '../helpers/http-servers.js';
import { testService } from '../helpers/sandbox.js';

const SECRET = 'cfg-test-secret-Q7x2';

let home: ReturnType<typeof tempHome>;
beforeEach(() => {
  home = tempHome();
});

/** Runs `payouts ARGS` in process; retry waits take no real time. */
function run(args: string[], opts: MainOptions = {}): Promise<MainResult> {
  return runMain(args, { clock: new FakeClock(), ...opts });
}
afterEach(() => home.cleanup());

/** Stores credentials through the CLI, the secret on stdin. */
function setCredentials(args: string[] = [], secret = `${SECRET}\n`): Promise<MainResult> {
  return run(
    ['config', 'set-credentials', '--client-id', 'cid-1', '--client-secret-stdin', ...args],
    {
      env: home.env,
      stdin: secret,
    },
  );
}

/** The config file path, as `config path` prints it. */
async function configPath(): Promise<string> {
  const r = await run(['config', 'path'], { env: home.env });
  return r.stdout.trim().split('\n').pop() as string;
}

describe('config set-credentials', () => {
  it('stores the credentials in a 0600 file inside a 0700 folder and says where', async () => {
    const r = await setCredentials(['--base-url', 'https://pay.example.com/']);
    expect(r.code).toBe(0);
    const path = await configPath();
    expect(r.stdout).toContain(path);
    expect(r.stdout + r.stderr).not.toContain(SECRET);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(dirname(path)).mode & 0o777).toBe(0o700);
    const stored = JSON.parse(readFileSync(path, 'utf8'));
    // One trailing newline removed, nothing else.
    expect(stored.profiles.default).toEqual({
      clientId: 'cid-1',
      clientSecret: SECRET,
      baseUrl: 'https://pay.example.com',
    });
  });

  it('stores into the profile named by --profile', async () => {
    expect((await setCredentials(['--profile', 'staging'])).code).toBe(0);
    const stored = JSON.parse(readFileSync(await configPath(), 'utf8'));
    expect(Object.keys(stored.profiles)).toEqual(['staging']);
  });

  it('explains the flags when there is no terminal to ask on, exit 2', async () => {
    const r = await run(['config', 'set-credentials'], { env: home.env });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--client-id ID');
    expect(r.stderr).toContain('--client-secret-stdin');
  });

  it('has no option that takes the secret itself', async () => {
    const r = await run(
      ['config', 'set-credentials', '--client-id', 'x', '--client-secret', SECRET],
      {
        env: home.env,
      },
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/unknown option/);
    const help = await run(['config', 'set-credentials', '--help']);
    expect(help.stdout).not.toMatch(/--client-secret </);
  });

  it('refuses plain http to a remote host and stores nothing, exit 2', async () => {
    const r = await setCredentials(['--base-url', 'http://x.invalid']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/plain http/);
    const path = await configPath();
    const stored = existsSync(path) ? JSON.parse(readFileSync(path, 'utf8')) : { profiles: {} };
    expect(stored.profiles).toEqual({});
  });

  it('refuses an empty secret, exit 3', async () => {
    const r = await setCredentials([], '\n');
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/Client-Secret from standard input is empty/);
  });

  it('refuses a secret that cannot be sent in an HTTP header and stores nothing, exit 3', async () => {
    const r = await setCredentials([], `${SECRET}€`);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(
      'error: the Client-Secret from standard input holds the character U+20AC, which cannot be sent in an HTTP header: nothing was stored',
    );
    expect(r.stdout + r.stderr).not.toContain(SECRET);
    const path = await configPath();
    expect(existsSync(path) ? readFileSync(path, 'utf8') : '').not.toContain(SECRET);
  });
});

describe('config set', () => {
  it('setting back to default what no one set writes no empty profile', async () => {
    const r = await run(['--profile', 'slow', 'config', 'set', 'quiet_time', 'default'], {
      env: home.env,
    });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Profile "slow" has no quiet_time in \S+: nothing to remove$/m);
    const show = await run(['config', 'show', '--json'], { env: home.env });
    expect(parseJsonStdout<{ stored_profiles: string[] }>(show).stored_profiles).toEqual([]);
    expect(
      (await run(['--profile', 'slow', 'config', 'set', 'quiet_time', '90'], { env: home.env }))
        .code,
    ).toBe(0);
    const removed = await run(['--profile', 'slow', 'config', 'set', 'quiet_time', 'default'], {
      env: home.env,
    });
    expect(removed.stdout).toMatch(/^Removed quiet_time from profile "slow" in /m);
  });
});

describe('a config file that is broken or open to others', () => {
  it('names the file and line of a JSON syntax error, without quoting the file, exit 2', async () => {
    const path = await configPath();
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, `{"profiles": {"default": {\n  "clientSecret": ${SECRET}\n}}}\n`, {
      mode: 0o600,
    });
    for (const args of [
      ['config', 'show'],
      ['status', 'R1', '--json'],
    ]) {
      const r = await run(args, { env: home.env });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(
        `error: the config file ${path} is not valid JSON (line 2, column 19): correct it in an editor, or move it away`,
      );
      expect(r.stdout + r.stderr).not.toContain(SECRET);
    }
  });

  it('warns on stderr when the config file is readable by others, with the fix', async () => {
    expect((await setCredentials()).code).toBe(0);
    const path = await configPath();
    chmodSync(path, 0o644);
    const r = await run(['config', 'show', '--json'], { env: home.env });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).config_file).toBe(path);
    const warnings = r.stderr.split('\n').filter((l) => l.startsWith('warning:'));
    // Once, though `config show` reads the file twice.
    expect(warnings).toEqual([
      `warning: the config file ${path} holds credentials and is open to other users (mode 0644): run \`chmod 600 ${path}\``,
    ]);
  });
});

describe('config show', () => {
  it('shows each setting with its origin and the secret masked', async () => {
    await setCredentials(['--base-url', 'https://pay.example.com']);
    const r = await run(['config', 'show'], { env: home.env });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/Profile\s+default \(used when neither --profile nor PAYOUTS_PROFILE/);
    const stateDb = join(home.env.XDG_STATE_HOME as string, 'payouts', 'state.db');
    expect(r.stdout).toContain(`State          ${stateDb} (this machine's history`);
    expect(r.stdout).toMatch(/Client-Id\s+cid-1 \(from file\)/);
    expect(r.stdout).toMatch(/Client-Secret\s+\*+Q7x2 \(from file\)/);
    expect(r.stdout).toMatch(/Base URL\s+https:\/\/pay\.example\.com \(from file\)/);
    expect(r.stdout).not.toContain(SECRET);
  });

  it('says when values come from the environment or a flag, also with --json', async () => {
    await setCredentials(['--base-url', 'https://pay.example.com']);
    const r = await run(['config', 'show', '--json', '--base-url', 'https://other.example.com'], {
      env: { ...home.env, PAYOUTS_CLIENT_SECRET: 'env-secret-ABCD' },
    });
    expect(r.code).toBe(0);
    expect(parseJsonStdout(r)).toEqual({
      schema_version: 1,
      command: 'config show',
      profile: { value: 'default', source: 'default' },
      client_id: { value: 'cid-1', source: 'file' },
      client_secret: { masked: '************', source: 'environment' },
      client_secret_problem: null,
      base_url: { value: 'https://other.example.com', source: 'flag' },
      state_url: null,
      config_file: await configPath(),
      state_db: join(home.env.XDG_STATE_HOME as string, 'payouts', 'state.db'),
      stored_profiles: ['default'],
    });
    expect(r.stdout).not.toContain('env-secret');
  });

  it('shows what is not set', async () => {
    const r = await run(['config', 'show', '--profile', 'empty'], { env: home.env });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/Profile\s+empty \(from flag\)/);
    expect(r.stdout).toMatch(/Client-Secret\s+\(not set\)/);
  });
});

describe('config path', () => {
  it('prints the config file path as the last line, or {path} with --json', async () => {
    const r = await run(['config', 'path'], { env: home.env });
    expect(r.code).toBe(0);
    const last = r.stdout.trimEnd().split('\n').pop();
    expect(last).toBe(`${home.env.XDG_CONFIG_HOME}/payouts/config.json`);
    const j = await run(['config', 'path', '--json'], { env: home.env });
    expect(parseJsonStdout(j)).toEqual({ schema_version: 1, command: 'config path', path: last });
  });
});

describe('config remove', () => {
  it('removes the profile, then says there is no such profile with exit 2', async () => {
    await setCredentials(['--profile', 'staging']);
    await setCredentials();
    const r = await run(['config', 'remove', '--profile', 'staging'], { env: home.env });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Removed profile "staging"');
    const stored = JSON.parse(readFileSync(await configPath(), 'utf8'));
    expect(Object.keys(stored.profiles)).toEqual(['default']);
    const again = await run(['config', 'remove', '--profile', 'staging'], { env: home.env });
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/no profile "staging".*profiles: default/);
  });

  it('removes the default profile when no --profile is given', async () => {
    await setCredentials();
    expect((await run(['config', 'remove'], { env: home.env })).code).toBe(0);
    expect((await run(['config', 'remove'], { env: home.env })).code).toBe(2);
  });
});

describe('config check', () => {
  let svc: Awaited<ReturnType<typeof testService>>;
  beforeAll(async () => {
    svc = await testService();
  });
  afterAll(async () => {
    await svc.close();
  });

  it('accepts the sandbox credentials stored in a profile', async () => {
    const stored = await run(
      [
        'config',
        'set-credentials',
        '--client-id',
        SANDBOX_CREDENTIALS.clientId,
        '--client-secret-stdin',
        '--base-url',
        svc.sandbox.baseUrl,
      ],
      { env: home.env, stdin: SANDBOX_CREDENTIALS.clientSecret },
    );
    expect(stored.code).toBe(0);
    const r = await run(['config', 'check'], { env: home.env });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/Credentials accepted by http:\/\/127\.0\.0\.1:\d+/);
    const j = await run(['config', 'check', '--json'], { env: home.env });
    expect(parseJsonStdout(j)).toMatchObject({
      ok: true,
      profile: 'default',
      client_id: 'sandbox-client-id',
    });
  });

  it('exits 3 when the service rejects the credentials', async () => {
    const r = await run(['config', 'check'], {
      env: { ...svc.env, PAYOUTS_CLIENT_SECRET: 'not-the-secret' },
    });
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/rejected the credentials/);
  });

  it('exits 3 naming set-credentials when there are none', async () => {
    const r = await run(['config', 'check'], {
      env: { ...home.env, PAYOUTS_BASE_URL: svc.sandbox.baseUrl },
    });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('payouts config set-credentials');
  });

  it('exits 7 when the service cannot be reached', async () => {
    const s = await startServer((_req, res) => res.end());
    await s.close();
    // config check retries on the real clock: no jitter makes its backoff waits 0 ms.
    const random = vi.spyOn(Math, 'random').mockReturnValue(0);
    try {
      const r = await run(['config', 'check'], { env: { ...svc.env, PAYOUTS_BASE_URL: s.url } });
      expect(r.code).toBe(7);
      expect(r.stderr).toMatch(/could not reach/);
    } finally {
      random.mockRestore();
    }
  });

  it('probes with a reference that cannot exist', async () => {
    const s = await startServer((_req, res) =>
      sendJson(res, 404, errorEnvelope('Payout not found')),
    );
    try {
      const r = await run(['config', 'check'], { env: { ...svc.env, PAYOUTS_BASE_URL: s.url } });
      expect(r.code).toBe(0);
      expect(s.requests.map((q) => q.url)).toEqual([
        expect.stringMatching(/^\/api\/v1\/payouts\/payouts-config-check-[0-9a-f]{16}$/),
      ]);
      expect(s.requests[0]?.headers['client-id']).toBe(SANDBOX_CREDENTIALS.clientId);
    } finally {
      await s.close();
    }
  });

  it('works with --sandbox without configuration', async () => {
    const r = await run(['config', 'check', '--sandbox'], { env: home.env });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/Credentials accepted/);
  });
});
