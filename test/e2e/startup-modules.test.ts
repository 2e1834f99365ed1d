import { readFileSync } from 'node:fs';
import Module from 'node:module';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fixture, runCli, tempHome } from '../helpers/cli.js';
import { recordEnvelope, refOf, sendJson, startServer } from '../helpers/http-servers.js';

/** The built-in modules a run of the built CLI loaded. */
async function modulesOf(args: string[], env: Record<string, string>): Promise<string[]> {
  const out = join(home.dir, `modules-${args[0]}.txt`);
  const r = await runCli(args, {
    env: {
      ...env,
      MODULES_OUT: out,
      NODE_OPTIONS: `--require ${fixture('startup', 'record-modules.cjs')}`,
    },
  });
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return readFileSync(out, 'utf8')
    .split('\n')
    .filter((m) => m.startsWith('NativeModule '))
    .map((m) => m.slice('NativeModule '.length));
}

const home = tempHome();
afterAll(() => home.cleanup());

describe('modules a command does not need are never loaded', () => {
  it('payouts status loads none of the built-in modules its HTTP client and helpers can do without', async () => {
    const server = await startServer((req, res) =>
      sendJson(res, 200, recordEnvelope(refOf(req) ?? '?', 'success')),
    );
    try {
      const loaded = await modulesOf(['status', 'PAY-1'], {
        ...home.env,
        PAYOUTS_CLIENT_ID: 'cid',
        PAYOUTS_CLIENT_SECRET: 'startup-test-secret',
        PAYOUTS_BASE_URL: server.url,
      });
      // It did connect, so the absences below are not those of a run that never did.
      expect(loaded).toContain('net');
      // undici gets small stand-ins for assert and http (scripts/build.mjs); os and
      // timers/promises are fetched only without HOME and on a retry's wait. Node 22.1+
      // loads os itself for its compile cache (bin/payouts.js enables it).
      const nodeLoadsOs = 'enableCompileCache' in Module;
      for (const name of [
        'assert',
        'child_process',
        'http',
        'http2',
        ...(nodeLoadsOs ? [] : ['os']),
        'timers/promises',
        'tty',
      ]) {
        expect(loaded).not.toContain(name);
      }
    } finally {
      await server.close();
    }
  });

  it('payouts --help loads no HTTP client', async () => {
    const loaded = await modulesOf(['--help'], home.env);
    for (const name of ['http', 'child_process', 'assert']) {
      expect(loaded).not.toContain(name);
    }
  });
});
