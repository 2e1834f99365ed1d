import { execFile } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_CREDENTIALS } from '../../src/sandbox/index.js';
import { BIN, runCli } from '../helpers/cli.js';
import { testService } from '../helpers/sandbox.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Whether a program is on PATH. */
function onPath(program: string): boolean {
  return (process.env.PATH ?? '').split(delimiter).some((dir) => existsSync(join(dir, program)));
}

const canRun =
  process.platform === 'linux' && onPath('dbus-run-session') && onPath('gnome-keyring-daemon');

/**
 * The steps, in one D-Bus session with gnome-keyring's Secret Service unlocked: each writes
 * its stdout, stderr and exit code to files named after it in $OUT.
 */
const SCRIPT = `
echo keyring-test-password | gnome-keyring-daemon --unlock --components=secrets >/dev/null
step() { name=$1; shift; "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"; echo $? >"$OUT/$name.rc"; }
entry='new (require("@napi-rs/keyring").Entry)("payouts", "default", {linux: {store: "secret-service"}})'
printf %s "$SECRET" | step set node "$BIN" config set-credentials --client-id "$CLIENT_ID" --client-secret-stdin --base-url "$BASE_URL"
step show node "$BIN" config show --json
step status node "$BIN" status NO-SUCH-REF --json
step stored node -e "process.stdout.write(String($entry.getPassword() === process.env.SECRET))"
step remove node "$BIN" config remove
step gone node -e "process.stdout.write(String($entry.getPassword()))"
`;

describe.runIf(canRun)(
  'the system keyring, for real (gnome-keyring under dbus-run-session)',
  () => {
    let svc: Awaited<ReturnType<typeof testService>>;
    beforeAll(async () => {
      svc = await testService();
    });
    afterAll(async () => {
      await svc.close();
    });

    /** What a step of SCRIPT printed and returned. */
    function step(name: string): { out: string; err: string; rc: number } {
      const read = (ext: string) => readFileSync(join(svc.home.dir, `${name}.${ext}`), 'utf8');
      return { out: read('out'), err: read('err'), rc: Number(read('rc').trim()) };
    }

    it('stores the secret in the keyring, reads it for a request, and removes it', async () => {
      const { home } = svc;
      await promisify(execFile)('dbus-run-session', ['--', 'sh', '-c', SCRIPT], {
        cwd: ROOT,
        timeout: 30_000,
        env: {
          PATH: process.env.PATH ?? '',
          LANG: 'C.UTF-8',
          ...home.env,
          // gnome-keyring keeps its keyring files under $XDG_DATA_HOME: the temp home's.
          XDG_DATA_HOME: join(home.dir, 'data'),
          OUT: home.dir,
          BIN,
          SECRET: SANDBOX_CREDENTIALS.clientSecret,
          CLIENT_ID: SANDBOX_CREDENTIALS.clientId,
          BASE_URL: svc.sandbox.baseUrl,
        },
      });
      const set = step('set');
      expect(set.rc).toBe(0);
      expect(set.out).toContain(
        'Client-Secret stored in the system keyring (service "payouts", account "default")',
      );
      const config = readFileSync(
        join(home.env.XDG_CONFIG_HOME as string, 'payouts', 'config.json'),
        'utf8',
      );
      expect(config).not.toContain(SANDBOX_CREDENTIALS.clientSecret);
      expect(step('stored').out).toBe('true');
      expect(JSON.parse(step('show').out).client_secret.source).toBe('keyring');
      // "not found" is an answer only accepted credentials get.
      expect(step('status').rc).toBe(6);
      expect(step('remove').out).toMatch(
        /Removed profile "default" from .* and the system keyring/,
      );
      expect(step('gone').out).toBe('null');
    });
  },
);

describe('payouts config set-credentials without a system keyring, through the built binary', () => {
  it('stores the secret in the 0600 config file, says so, and the file works for a check', async () => {
    const service = await testService();
    try {
      const env = { ...service.home.env };
      const secret = SANDBOX_CREDENTIALS.clientSecret;
      const set = await runCli(
        [
          'config',
          'set-credentials',
          '--client-id',
          SANDBOX_CREDENTIALS.clientId,
          '--client-secret-stdin',
          '--base-url',
          service.sandbox.baseUrl,
        ],
        { env, stdin: secret },
      );
      expect(set.code, set.stderr).toBe(0);
      expect(set.stdout).toMatch(
        /Client-Secret stored in \S+config\.json \(readable by you only\): no system keyring can be used here: /,
      );
      expect(`${set.stdout}${set.stderr}`).not.toContain(secret);
      const file = join(service.home.env.XDG_CONFIG_HOME as string, 'payouts', 'config.json');
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(readFileSync(file, 'utf8')).toContain(secret);
      const check = await runCli(['config', 'check'], { env });
      expect(check.code, check.stderr).toBe(0);
    } finally {
      await service.close();
    }
  });
});
