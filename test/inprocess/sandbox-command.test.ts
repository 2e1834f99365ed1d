import { readFileSync } from 'node:fs';
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
    // The built-in late outcomes, with the delay in force.
    expect(r.stdout).toContain(
      '+late-failed and +late-canceled are pending, then failed or canceled after\n10 ms',
    );
  });

  it("prints the triggers in force under --json, the user's first", async () => {
    const r = await runMain(
      ['sandbox', '--port', '0', '--json', '--trigger', '+bounce:success:failed:5000'],
      {
        env: { ...home().env, PAYOUTS_SANDBOX_TRIGGERS: '+ignored:failed' },
        interrupt: AbortSignal.abort(),
      },
    );
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(Object.keys(doc)).toEqual([
      'schema_version',
      'command',
      'base_url',
      'client_id',
      'client_secret',
      'state_dir',
      'pending_delay_ms',
      'triggers',
    ]);
    // docs/sandbox.md shows the document with these keys, as printed (issue 49).
    const page = readFileSync(new URL('../../docs/sandbox.md', import.meta.url), 'utf8');
    const shown = /```json\n([\s\S]*?)\n```/.exec(page)?.[1] ?? '';
    expect([...shown.matchAll(/^ {2}"(\w+)":/gm)].map((m) => m[1])).toEqual(Object.keys(doc));
    expect(doc.pending_delay_ms).toBe(30000);
    // --trigger replaces the variable's rules; the built-in ones follow.
    expect(doc.triggers.slice(0, 2)).toEqual([
      { match: '+bounce', status: 'success', later: 'failed', after_ms: 5000 },
      { match: '+failed', status: 'failed', later: null, after_ms: null },
    ]);
    expect(doc.triggers).toContainEqual({
      match: '+late-failed',
      status: 'pending',
      later: 'failed',
      after_ms: 30000,
    });
    expect(doc.triggers.map((t: { match: string }) => t.match)).not.toContain('+ignored');
  });

  it('lists the triggers of PAYOUTS_SANDBOX_TRIGGERS for people', async () => {
    const r = await runMain(['sandbox', '--port', '0'], {
      env: { ...home().env, PAYOUTS_SANDBOX_TRIGGERS: '@slow.example:pending:120000' },
      interrupt: AbortSignal.abort(),
    });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      'Your triggers, checked first:\n  @slow.example: pending, then success after 2 min',
    );
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
    [['--trigger', 'x:failed:success'], /--trigger "x:failed:success": a failed payout is final/],
  ])('refuses %j with exit code 2', async (args, message) => {
    const r = await runMain(['sandbox', ...args], { env: home().env });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stdout).toBe('');
  });
});
