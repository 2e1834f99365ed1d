import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ledgerPerTest } from '../helpers/ledger-service.js';
import { FakeClock, runMain } from '../helpers/main.js';

// Issue 31, item 4: a state URL pg cannot use as meant is a usage error (exit 2) naming the
// expected form, before anything is read or sent, and its password never shows.

const fixture = ledgerPerTest();
const SECRET = 'pa55-w0rd-canary';

const REFUSED: Array<{ url: string; says: RegExp }> = [
  {
    url: `postgres://u:${SECRET}@127.0.0.1:5432:99/db`,
    says: /its port "5432:99" is not a number from 1 to 65535/,
  },
  {
    url: `postgres://u:${SECRET}@[::1:5432/db`,
    says: /its IPv6 address opens with \[ but is not closed with \]/,
  },
  {
    url: `postgres://u:${SECRET}@127.0.0.1:5432/db?sslmode=bogus`,
    says: /sslmode="bogus", which is not one of disable, prefer, require, verify-ca, verify-full, no-verify/,
  },
  {
    url: `postgres://u:pa55/${SECRET}@127.0.0.1:5432/db`,
    says: /a \/ \? or # before its last @ ends the host early/,
  },
];

describe('a state URL that cannot be used', () => {
  for (const { url, says } of REFUSED) {
    it(`is refused with exit 2 and the expected form: ${url.replace(SECRET, '…')}`, async () => {
      const svc = await fixture.start();
      const home = fixture.home();
      const file = join(home.dir, 'run.csv');
      writeFileSync(file, 'reference_id,amount,currency,recipient\nU-1,1.00,EUR,a@example.com\n');
      for (const [args, env] of [
        [['send', file, '--yes'], { ...svc.env(home.env), PAYOUTS_STATE_URL: url }],
        [['send', file, '--yes', '--json', '--state-url', url], svc.env(home.env)],
        [['runs', '--state-url', url], home.env],
        [['config', 'set', 'state_url', url], home.env],
      ] as const) {
        const r = await runMain([...args], { env, clock: new FakeClock() });
        expect(r.code, r.stderr).toBe(2);
        const text = `${r.stdout}\n${r.stderr}`;
        expect(text).toMatch(says);
        expect(text).not.toMatch(/internal error|Invalid URL/);
        expect(text).not.toContain(SECRET);
        expect(text).toContain('u:***@');
      }
      expect(svc.creates).toBe(0);
    });
  }

  it('names the form a usable URL takes, with how to write a password holding @', async () => {
    const home = fixture.home();
    const r = await runMain(['runs', '--state-url', `postgres://u:${SECRET}@h:x/db`], {
      env: home.env,
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('postgres://USER:PASSWORD@HOST:5432/DATABASE');
    expect(r.stderr).toContain('%40');
  });
});
