import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { parseJsonStdout, tempHome } from '../helpers/cli.js';
import {
  recordEnvelope,
  refOf,
  sendJson,
  startServer,
  type TestServer,
} from '../helpers/http-servers.js';
import { FakeClock, runMain } from '../helpers/main.js';

// `payouts status` shows only what it asked for, and refuses the references send refuses.

describe('payouts status checks what it shows', () => {
  const servers: TestServer[] = [];
  const home = tempHome();
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });
  afterAll(() => home.cleanup());

  /** A service that answers every lookup of `wrong` with the record of "B-2", a success. */
  async function mixUp(wrong: string) {
    const s = await startServer((req, res) => {
      const ref = refOf(req) ?? '?';
      sendJson(res, 200, recordEnvelope(ref === wrong ? 'B-2' : ref, 'success'));
    });
    servers.push(s);
    return s;
  }
  function run(args: string[], s: TestServer, stdin?: string) {
    const env = {
      ...home.env,
      PAYOUTS_CLIENT_ID: 'cid',
      PAYOUTS_CLIENT_SECRET: 'status-check-secret',
      PAYOUTS_BASE_URL: s.url,
    };
    return runMain(args, { clock: new FakeClock(), env, stdin });
  }

  it('exits 7 and never shows success when one reference is answered with another', async () => {
    const s = await mixUp('A-1');
    const r = await run(['status', 'A-1'], s);
    expect(r.code).toBe(7);
    expect(r.stdout).not.toContain('success');
    expect(r.stderr).not.toContain('success');
    expect(r.stderr).toContain('"A-1"');
    expect(r.stderr).toContain('"B-2"');
  });

  it('shows the mixed-up row as an error in a table and in --json, exit 7', async () => {
    const s = await mixUp('A-1');
    const table = await run(['status', 'A-1', 'C-3'], s);
    expect(table.code).toBe(7);
    const row = table.stdout.split('\n').find((l) => l.includes('A-1'));
    expect(row).toBeDefined();
    expect(row).not.toContain('success');
    expect(row).not.toContain('B-2');
    const json = await run(['status', 'A-1', 'C-3', '--json'], s);
    expect(json.code).toBe(7);
    const docs = parseJsonStdout<{ results: Array<Record<string, unknown>> }>(json).results;
    expect(docs[0]).toEqual({
      reference_id: 'A-1',
      outcome: 'error',
      status: null,
      service_status: null,
      error: expect.stringContaining('"B-2"'),
      record: null,
      retried_as: null,
      paid_by_retry: false,
    });
    expect(docs[1]?.status).toBe('success');
  });

  it('trims white space a paste left at either end of an argument, with a note', async () => {
    const s = await mixUp('none');
    for (const ref of [' A-1', 'A-1 ', 'A-1\u00a0', '\u3000A-1', '\tA-1']) {
      const r = await run(['status', ref], s);
      expect(r.code, JSON.stringify(ref)).toBe(0);
      expect(r.stderr).toContain(
        'has white space at its ends, as a paste leaves it: looked up as "A-1"',
      );
    }
    expect(s.requests.every((q) => q.url.endsWith('/A-1'))).toBe(true);
    const esc = await run(['status', '\u001bA-1'], s);
    expect(esc.code).toBe(2);
    expect(esc.stderr).toContain('U+001B ESCAPE at character 1');
  });

  it('names the value and the fix of a refused reference, in an argument and in a file', async () => {
    const s = await mixUp('none');
    const arg = await run(['status', '..'], s);
    expect(arg.code).toBe(2);
    expect(arg.stderr).toContain('reference_id "..": means the parent folder');
    expect(arg.stderr).toContain('choose a reference with letters or digits');
    const list = join(home.dir, 'refs.txt');
    writeFileSync(list, 'A-1\n.\n');
    const file = await run(['status', '--from', list], s);
    expect(file.code).toBe(2);
    expect(file.stderr).toContain('line 2: reference_id ".": means this folder');
    expect(file.stderr).toContain('choose a reference with letters or digits');
    const empty = await run(['status', ''], s);
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain('reference_id "": is empty');
    expect(s.requests).toHaveLength(0);
  });
});
