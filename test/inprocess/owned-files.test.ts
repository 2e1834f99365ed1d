import { chmodSync, chownSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseJsonStdout } from '../helpers/cli.js';
import { ledgerPerTest } from '../helpers/ledger-service.js';
import { runMain } from '../helpers/main.js';
import { writeRun } from '../helpers/sandbox.js';

// Issue 52, item 3: a config or a state folder another user owns, or can change, is refused
// under every output mode (--json --quiet too), before anything is sent.

const ledger = ledgerPerTest();
const asRoot = process.getuid?.() === 0;
const OTHER = 65534;

interface ErrorDoc {
  exit_code?: number;
  error: { message: string; exit_code: number } | null;
}

/** A config folder holding a config.json that points the default profile at `baseUrl`. */
function plantConfig(home: { dir: string }, baseUrl: string): string {
  const dir = join(home.dir, 'config', 'payouts');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const profile = { baseUrl, clientId: 'theirs', clientSecret: 'theirs' };
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ profiles: { default: profile } }), {
    mode: 0o600,
  });
  return dir;
}

describe('a config no one else may change', () => {
  it.skipIf(!asRoot)(
    'refuses a config folder another user made, under --json --quiet too: the secret goes nowhere (exit 3)',
    async () => {
      const svc = await ledger.start();
      const home = ledger.home();
      const dir = plantConfig(home, svc.url);
      chownSync(dir, OTHER, OTHER);
      chownSync(join(dir, 'config.json'), OTHER, OTHER);
      const env = { ...home.env, PAYOUTS_CLIENT_ID: 'mine', PAYOUTS_CLIENT_SECRET: 'mine-secret' };
      const { file } = writeRun(home.dir, 2);
      for (const args of [
        ['status', 'ONCE-0001', '--json'],
        ['send', file, '--yes', '--json', '--quiet'],
        ['config', 'show', '--json'],
      ]) {
        const r = await runMain(args, { env });
        expect(r.code, args.join(' ')).toBe(3);
        const doc = parseJsonStdout<ErrorDoc>(r);
        expect(doc.error?.message).toMatch(
          /^the config folder .*config\/payouts belongs to (nobody \()?uid 65534\)?, not to you: /,
        );
        expect(r.stderr).toMatch(/error: the config folder .* belongs to/);
        expect(r.stderr).not.toMatch(/warning/);
      }
      expect([svc.creates, svc.gets]).toEqual([0, 0]);
    },
  );

  it('refuses a config file others can change, whatever the output mode (exit 3)', async () => {
    const svc = await ledger.start();
    const home = ledger.home();
    const dir = plantConfig(home, svc.url);
    chmodSync(join(dir, 'config.json'), 0o666);
    const r = await runMain(['status', 'ONCE-0001', '--json', '--quiet'], { env: home.env });
    expect(r.code).toBe(3);
    expect(parseJsonStdout<ErrorDoc>(r).error?.message).toMatch(
      /config\.json can be changed by other users \(mode 0666\): .*run `chmod 600 /,
    );
    expect(svc.gets).toBe(0);
  });
});

describe('a state folder no one else may change', () => {
  it('refuses a state.db link planted in the state folder, sending nothing (exit 2)', async () => {
    const svc = await ledger.start();
    const home = ledger.home();
    const env = svc.env(home.env);
    const { file } = writeRun(home.dir, 2);
    const state = join(home.dir, 'state', 'payouts');
    mkdirSync(state, { recursive: true, mode: 0o700 });
    const victim = join(home.dir, 'victim.db');
    writeFileSync(victim, 'the operator keeps this\n');
    symlinkSync(victim, join(state, 'state.db'));
    for (const args of [
      ['send', file, '--yes', '--json', '--quiet'],
      ['runs', '--json'],
      ['send', file, '--dry-run', '--json'],
    ]) {
      const r = await runMain(args, { env });
      expect(r.code, args.join(' ')).toBe(2);
      expect(parseJsonStdout<ErrorDoc>(r).error?.message).toMatch(
        /state\.db, in payouts' state folder, is a symbolic link \(to .*victim\.db\)/,
      );
    }
    expect(readFileSync(victim, 'utf8')).toBe('the operator keeps this\n');
    expect([svc.creates, svc.gets]).toEqual([0, 0]);
  });

  it('refuses a state folder others can change (exit 2), and one another user owns', async () => {
    const svc = await ledger.start();
    const home = ledger.home();
    const env = svc.env(home.env);
    const { file } = writeRun(home.dir, 1);
    const state = join(home.dir, 'state', 'payouts');
    expect((await runMain(['send', file, '--yes'], { env })).code).toBe(0);
    chmodSync(state, 0o777);
    let r = await runMain(['send', file, '--yes', '--json', '--quiet'], { env });
    expect(r.code).toBe(2);
    expect(parseJsonStdout<ErrorDoc>(r).error?.message).toContain(
      `the state folder ${state} can be changed by other users (mode 0777)`,
    );
    if (!asRoot) return;
    chmodSync(state, 0o700);
    chownSync(state, OTHER, OTHER);
    r = await runMain(['runs'], { env });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/the state folder .* belongs to (nobody \()?uid 65534\)?, not to you/);
    expect(svc.creates).toBe(1);
  });
});
