import { describe, expect, it } from 'vitest';
import { tempHomesPerTest } from '../helpers/cli.js';
import { runMain } from '../helpers/main.js';

// `payouts sandbox` in process; serving until SIGTERM, and sharing its ledger with another
// process, are in test/e2e/sandbox-command.test.ts.

const home = tempHomesPerTest();

describe('payouts sandbox', () => {
  it('prints the base URL, the demo credentials and an example, and stops when interrupted', async () => {
    // Interrupted from the start: it prints what it serves, then stops at once.
    const r = await runMain(['sandbox', '--port', '0', '--pending-delay', '10'], {
      env: home().env,
      interrupt: AbortSignal.abort(),
    });
    expect(r.code).toBe(0);
    const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(r.stdout)?.[1];
    expect(url).toBeDefined();
    expect(r.stdout).toContain('Client-Id:      sandbox-client-id');
    expect(r.stdout).toContain('Client-Secret:  sandbox-client-secret');
    expect(r.stdout).toContain(
      'PAYOUTS_CLIENT_ID=sandbox-client-id PAYOUTS_CLIENT_SECRET=sandbox-client-secret',
    );
    expect(r.stdout).toContain(`payouts --base-url ${url} status REF`);
    expect(r.stdout).toContain('Ctrl-C');
  });

  it.each([
    [
      ['--fault', 'create:0:500'],
      /invalid fault rule "create:0:500": N "0" must be a whole number from 1/,
    ],
    [['--port', 'eighty'], /--port "eighty": use a whole number from 0/],
    [['--max-per-request', '0'], /--max-per-request "0": use a whole number from 1/],
    [['--prefix', 'merchant'], /path prefix "merchant" must be a URL path/],
    [['--webhook-url', 'mailto:x@y'], /must be an http:\/\/ or https:\/\/ URL/],
  ])('refuses %j with exit code 2', async (args, message) => {
    const r = await runMain(['sandbox', ...args], { env: home().env });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stdout).toBe('');
  });
});
