import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readSandboxLedger, SANDBOX_CREDENTIALS, startSandbox } from '../../src/sandbox/index.js';
import { spawnCli, tempHome } from '../helpers/cli.js';

// A sandbox process serving until a signal, and sharing its ledger with another process;
// its banner and refusals run in process: test/inprocess/sandbox-command.test.ts.

const AUTH = {
  'Client-Id': SANDBOX_CREDENTIALS.clientId,
  'Client-Secret': SANDBOX_CREDENTIALS.clientSecret,
};

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A running `payouts sandbox` child, with its output so far. */
interface Running {
  child: ChildProcessWithoutNullStreams;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Spawns `payouts sandbox ARGS` in a fresh temp home. */
function spawnSandbox(args: string[]): Running & { home: ReturnType<typeof tempHome> } {
  const home = tempHome();
  const child = spawnCli(['sandbox', ...args], { env: home.env });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    out += d;
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    err += d;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal })),
  );
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
    home.cleanup();
  });
  return { child, home, stdout: () => out, stderr: () => err, exited };
}

/** Waits until `ready` accepts the output, failing with the output after `timeoutMs`. */
async function waitFor<T>(
  r: Running,
  ready: (stdout: string) => T | undefined,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = ready(r.stdout());
    if (value !== undefined) return value;
    if (Date.now() > deadline || r.child.exitCode !== null) {
      throw new Error(`sandbox not ready:\n${r.stdout()}\n--- stderr ---\n${r.stderr()}`);
    }
    await new Promise((res) => setTimeout(res, 25));
  }
}

/** The first complete JSON document on stdout, once there is one. */
function firstJson(stdout: string): Record<string, string> | undefined {
  try {
    return JSON.parse(stdout) as Record<string, string>;
  } catch {
    return undefined;
  }
}

describe('payouts sandbox', () => {
  it('--json prints one document, serves, and exits 0 on SIGTERM', async () => {
    const r = spawnSandbox(['--port', '0', '--json', '--prefix', '/merchant']);
    const doc = await waitFor(r, firstJson);
    expect(doc).toEqual({
      schema_version: 1,
      command: 'sandbox',
      base_url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/merchant$/),
      client_id: 'sandbox-client-id',
      client_secret: 'sandbox-client-secret',
      state_dir: join(r.home.dir, 'state', 'payouts'),
      pending_delay_ms: 30000,
      triggers: expect.arrayContaining([
        { match: '+late-failed', status: 'pending', later: 'failed', after_ms: 30000 },
      ]),
    });
    const res = await fetch(`${doc.base_url}/api/v1/payouts`, {
      method: 'POST',
      headers: { ...AUTH, 'Content-Type': 'application/json' },
      body: '{"payouts":[{"amount":100.00,"currency":"USD","recipient":"a@example.com","reference_id":"e2e-1"}]}',
    });
    const body = (await res.json()) as {
      data: { results: Array<{ status: string; charges: number }> };
    };
    expect(res.status).toBe(200);
    expect(body.data.results[0]).toMatchObject({ status: 'success', charges: 1 });
    expect((await readSandboxLedger(doc.state_dir as string)).get('e2e-1')).toMatchObject({
      applied: 1,
      amount: '100',
    });

    r.child.kill('SIGTERM');
    const { code } = await r.exited;
    expect(code).toBe(0);
    // stdout held exactly the one document.
    expect(JSON.parse(r.stdout())).toEqual(doc);
    expect(r.stderr()).toMatch(/sandbox: POST \/merchant\/api\/v1\/payouts -> 200/);
  });

  it('shares its ledger with other sandboxes on the same state folder, across processes', async () => {
    const r = spawnSandbox(['--port', '0', '--json']);
    const doc = await waitFor(r, firstJson);
    const inProcess = await startSandbox({ stateDir: doc.state_dir as string });
    cleanups.push(() => inProcess.close());
    const send = (base: string) =>
      fetch(`${base}/api/v1/payouts`, {
        method: 'POST',
        headers: { ...AUTH, 'Content-Type': 'application/json' },
        body: JSON.stringify({
          payouts: [{ amount: 5, currency: 'EUR', recipient: 'b', reference_id: 'cross-1' }],
        }),
      }).then(
        (x) =>
          x.json() as Promise<{ data: { results: Array<{ message?: string; status: string }> } }>,
      );
    expect((await send(inProcess.baseUrl)).data.results[0]?.status).toBe('success');
    const second = await send(doc.base_url as string);
    expect(second.data.results[0]?.message).toBe('Duplicate reference_id: already used');
    const status = await fetch(`${doc.base_url}/api/v1/payouts/cross-1`, { headers: AUTH });
    expect(((await status.json()) as { data: { currency: string } }).data.currency).toBe('EUR');
  });
});
