import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PayoutClient } from '../../src/api/client.js';
import { Secret } from '../../src/api/secret.js';
import { SANDBOX_CREDENTIALS } from '../../src/sandbox/index.js';
import { parseJsonStdout, tempHome } from '../helpers/cli.js';
import { recordEnvelope, refOf, sendJson, startServer } from '../helpers/http-servers.js';
import { FakeClock, runMain } from '../helpers/main.js';
import { testService } from '../helpers/sandbox.js';

// Issue 35, as support staff meet `payouts status`: what needs attention first, counts in
// send's words, typos answered with "did you mean", and a pasted space trimmed.

/** Creates payouts in the sandbox straight through the client; "+failed" etc. pick the status. */
async function createPayouts(baseUrl: string, payouts: Array<[ref: string, recipient: string]>) {
  const client = new PayoutClient({
    baseUrl,
    clientId: SANDBOX_CREDENTIALS.clientId,
    clientSecret: new Secret(SANDBOX_CREDENTIALS.clientSecret),
    userAgent: 'status-support-test',
  });
  try {
    await client.createPayouts({
      payouts: payouts.map(([reference_id, recipient]) => ({
        reference_id,
        recipient,
        amount: '3.00',
        currency: 'EUR',
      })),
    });
  } finally {
    await client.close();
  }
}

describe('payouts status for support staff', () => {
  let svc: Awaited<ReturnType<typeof testService>>;
  const run = (args: string[]) => runMain(args, { clock: new FakeClock(), env: svc.env });
  const oks = Array.from({ length: 57 }, (_, i) => `OK-${String(i + 1).padStart(3, '0')}`);

  beforeAll(async () => {
    svc = await testService({ pendingDelayMs: 3_600_000 });
    await createPayouts(svc.sandbox.baseUrl, [
      ...oks.slice(0, 30).map((r): [string, string] => [r, 'a@example.com']),
      ['BAD-1', 'b+failed@example.com'],
      ['STOP-1', 'c+canceled@example.com'],
      ['WAIT-1', 'd+pending@example.com'],
      ...oks.slice(30).map((r): [string, string] => [r, 'a@example.com']),
    ]);
    // DEC-0047 is sent by a run of this history, so that typos of it are recognised.
    const file = join(svc.home.dir, 'december.csv');
    writeFileSync(
      file,
      'reference_id,amount,currency,recipient\nDEC-0047,5.00,EUR,e@example.com\n',
    );
    const sent = await run(['send', file, '--yes']);
    expect(sent.code).toBe(0);
  });
  afterAll(async () => {
    await svc.close();
  });

  it('lists the rows needing attention first, successes past 50 only with --all, counts in one order', async () => {
    const list = join(svc.home.dir, 'refs.txt');
    writeFileSync(
      list,
      `${[...oks.slice(0, 30), 'BAD-1', 'STOP-1', 'WAIT-1', 'GONE-1', ...oks.slice(30)].join('\n')}\n`,
    );
    const r = await run(['status', '--from', list]);
    expect(r.code).toBe(6);
    const rows = r.stdout.split('\n').slice(1).filter(Boolean);
    expect(rows.map((l) => l.split('\t')[0])).toEqual(['BAD-1', 'STOP-1', 'WAIT-1', 'GONE-1']);
    expect(r.stderr).toContain('57 successful payouts not shown (use --all to list every row)');
    expect(r.stderr).toContain(
      '61 payouts: 57 succeeded, 1 failed, 1 canceled, 1 pending, 1 not found',
    );
    const all = await run(['status', '--from', list, '--all']);
    const allRows = all.stdout.split('\n').slice(1).filter(Boolean);
    expect(allRows).toHaveLength(61);
    expect(allRows.slice(0, 4).map((l) => l.split('\t')[0])).toEqual([
      'BAD-1',
      'STOP-1',
      'WAIT-1',
      'GONE-1',
    ]);
    expect(all.stderr).not.toContain('not shown');
  });

  it('answers a typo with "did you mean", naming the run and the service asked, exit 6', async () => {
    for (const typo of ['dec-0047', 'DEC0047', 'DEC 0047', 'DEC-0048']) {
      const r = await run(['status', typo]);
      expect(r.code, typo).toBe(6);
      expect(r.stdout).toMatch(
        new RegExp(
          `^${typo}: not found at ${svc.sandbox.baseUrl.replace(/[.]/g, '\\.')} \\(a reference_id is case-sensitive\\); did you mean DEC-0047 \\(sent by run [0-9a-f]{16} on \\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2} UTC\\)\\?$`,
          'm',
        ),
      );
    }
    const far = await run(['status', 'XYZ-9']);
    expect(far.code).toBe(6);
    expect(far.stdout).not.toContain('did you mean');
    const json = await run(['status', 'dec-0047', 'OK-001', '--json']);
    expect(json.code).toBe(6);
    const doc = parseJsonStdout<{ error: { message: string } }>(json);
    expect(doc.error.message).toContain(
      `1 of 2 payouts not found at ${svc.sandbox.baseUrl}: dec-0047`,
    );
    expect(doc.error.message).toContain('did you mean DEC-0047 (sent by run');
    const table = await run(['status', 'dec-0047', 'OK-001']);
    expect(table.stderr).toContain('dec-0047: not found at');
    expect(table.stderr).toContain(`1 payout not found at ${svc.sandbox.baseUrl}`);
  });

  it('trims white space a paste left at either end, with a note; other control characters stay refused', async () => {
    for (const pasted of [
      'DEC-0047 ',
      ' DEC-0047',
      'DEC-0047\t',
      'DEC-0047\r\n',
      '\u00a0DEC-0047',
    ]) {
      const r = await run(['status', pasted]);
      expect(r.code, JSON.stringify(pasted)).toBe(0);
      expect(r.stderr).toMatch(
        /note: reference_id ".*" has white space at its ends, as a paste leaves it: looked up as "DEC-0047"/,
      );
      expect(r.stdout).toMatch(/Status\s+success/);
    }
    const bell = await run(['status', 'DEC-0047\u0007']);
    expect(bell.code).toBe(2);
    expect(bell.stderr).toContain('control character U+0007');
  });
});

describe('payouts status --json, interrupted', () => {
  it('carries every lookup done before the stop, with the interruption as its error (exit 130)', async () => {
    const stop = new AbortController();
    const server = await startServer((req, res) => {
      const ref = refOf(req) ?? '';
      // The third lookup is held: the stop comes while it is in flight.
      if (ref.startsWith('SLOW')) {
        stop.abort();
        return;
      }
      sendJson(res, 200, recordEnvelope(ref, 'success'));
    });
    const home = tempHome();
    try {
      const env = {
        ...home.env,
        PAYOUTS_CLIENT_ID: 'cid',
        PAYOUTS_CLIENT_SECRET: 'interrupt-secret',
        PAYOUTS_BASE_URL: server.url,
      };
      const args = ['status', 'FAST-1', 'FAST-2', 'SLOW-3', 'FAST-4', '--concurrency', '1'];
      const r = await runMain([...args, '--json'], {
        clock: new FakeClock(),
        env,
        interrupt: stop.signal,
      });
      expect(r.code).toBe(130);
      const doc = parseJsonStdout<{
        interrupted: boolean;
        exit_code: number;
        reference_count: number;
        success_count: number;
        error: { message: string };
        results: Array<{ reference_id: string; status: string }>;
      }>(r);
      expect(doc.interrupted).toBe(true);
      expect(doc.exit_code).toBe(130);
      expect(doc.results.map((x) => [x.reference_id, x.status])).toEqual([
        ['FAST-1', 'success'],
        ['FAST-2', 'success'],
      ]);
      expect(doc.success_count).toBe(2);
      expect(doc.error.message).toContain('interrupted: 2 of 4 payouts looked up before the stop');
    } finally {
      await server.close();
      home.cleanup();
    }
  });
});
