import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PayoutClient } from '../../src/api/client.js';
import { Secret } from '../../src/api/secret.js';
import { SANDBOX_CREDENTIALS } from '../../src/sandbox/index.js';
import { parseJsonStdout, sample, tempHome } from '../helpers/cli.js';
import {
  errorEnvelope,
  recordEnvelope,
  refOf,
  sendJson,
  startProxy,
  startServer,
  startTlsServer,
  type TestServer,
} from '../helpers/http-servers.js';
import { FakeClock, type MainOptions, runMain } from '../helpers/main.js';
import { testService } from '../helpers/sandbox.js';

// `payouts status` run in this process; the signal and NODE_EXTRA_CA_CERTS cases, which
// need a process of their own, are in test/e2e/status.test.ts.

/** Creates payouts in a sandbox; the recipient's "+failed" etc. picks the status. */
async function createPayouts(baseUrl: string, payouts: Array<[ref: string, recipient: string]>) {
  const client = new PayoutClient({
    baseUrl,
    clientId: SANDBOX_CREDENTIALS.clientId,
    clientSecret: new Secret(SANDBOX_CREDENTIALS.clientSecret),
    userAgent: 'status-test',
  });
  try {
    await client.createPayouts({
      payouts: payouts.map(([reference_id, recipient]) => ({
        reference_id,
        recipient,
        amount: '12.50',
        currency: 'USD',
        description: `payout ${reference_id}`,
      })),
    });
  } finally {
    await client.close();
  }
}

/** Runs `payouts ARGS` in process, with a clock whose retry waits take no time by default. */
function run(args: string[], opts: MainOptions = {}) {
  return runMain(args, { clock: new FakeClock(), ...opts });
}

interface Doc {
  reference_id: string;
  status?: string | null;
  error?: unknown;
  [k: string]: unknown;
}

/** The results of a --json status document. */
function results(r: { stdout: string; stderr: string }): Doc[] {
  return parseJsonStdout<{ results: Doc[] }>(r).results;
}

/** The record of the only result of a --json status document. */
function record(r: { stdout: string; stderr: string }): Doc {
  const [only] = results(r);
  expect(only?.outcome).toBe('found');
  return only?.record as Doc;
}

/** The result of a reference the service does not have. */
function NOT_FOUND(ref: string): Doc {
  return {
    reference_id: ref,
    outcome: 'not_found',
    status: null,
    service_status: null,
    error: 'Payout not found',
    record: null,
    retried_as: null,
    paid_by_retry: false,
  };
}

describe('payouts status against the sandbox', () => {
  let svc: Awaited<ReturnType<typeof testService>>;

  beforeAll(async () => {
    svc = await testService({ pendingDelayMs: 3_600_000 });
    await createPayouts(svc.sandbox.baseUrl, [
      ['ok-1', 'ann@example.com'],
      ['ok-2', 'bob@example.com'],
      ['fail-1', 'carl+failed@example.com'],
      ['cancel-1', 'dora+canceled@example.com'],
      ['pend-1', 'eve+pending@example.com'],
    ]);
  });
  afterAll(async () => {
    await svc.close();
  });

  it('shows every field of one payout, times in UTC and local time', async () => {
    // Local time is the process's: Node follows TZ when it changes.
    const tz = process.env.TZ;
    process.env.TZ = 'Asia/Tokyo';
    try {
      const r = await run(['status', 'ok-1'], { env: svc.env });
      expect(r.code).toBe(0);
      for (const re of [
        /Reference ID\s+ok-1/,
        /Status\s+success/,
        /Amount\s+USD 12\.50/,
        /Recipient\s+ann@example\.com/,
        /Description\s+payout ok-1/,
        /Transaction ID\s+\S+/,
        /Created at\s+\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z \(local \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} \+09:00\)/,
        /Updated at\s+\S+Z \(local .* \+09:00\)/,
      ]) {
        expect(r.stdout).toMatch(re);
      }
    } finally {
      if (tz === undefined) delete process.env.TZ;
      else process.env.TZ = tz;
    }
  });

  it('prints the payout record with --json, its amount a decimal string', async () => {
    const r = await run(['status', 'ok-1', '--json'], { env: svc.env });
    expect(r.code).toBe(0);
    const doc = record(r);
    expect(doc).toMatchObject({
      reference_id: 'ok-1',
      status: 'success',
      amount: '12.50',
      currency: 'USD',
      recipient: 'ann@example.com',
      description: 'payout ok-1',
    });
    expect(typeof doc.transaction_id).toBe('string');
    expect(typeof doc.created_at).toBe('string');
    expect(typeof doc.updated_at).toBe('string');
  });

  it('lists several references, in order, and exits 4 for failed/canceled', async () => {
    const r = await run(['status', 'ok-1', 'fail-1', 'cancel-1', '--json'], { env: svc.env });
    expect(r.code).toBe(4);
    const docs = results(r);
    expect(docs.map((d) => [d.reference_id, d.status])).toEqual([
      ['ok-1', 'success'],
      ['fail-1', 'failed'],
      ['cancel-1', 'canceled'],
    ]);
  });

  it('shows a missing reference as not_found and exits 6, with an error object', async () => {
    const one = await run(['status', 'nope-1', '--json'], { env: svc.env });
    expect(one.code).toBe(6);
    expect(results(one)).toEqual([NOT_FOUND('nope-1')]);
    expect(parseJsonStdout<Doc>(one).error).toMatchObject({ type: 'NotFoundError', exit_code: 6 });
    const many = await run(['status', 'ok-1', 'nope-1', 'fail-1', '--json'], { env: svc.env });
    expect(many.code).toBe(6);
    expect(results(many)[1]).toEqual(NOT_FOUND('nope-1'));
  });

  it('exits 5 while a payout is pending, and 4 beats 5', async () => {
    expect((await run(['status', 'pend-1'], { env: svc.env })).code).toBe(5);
    expect((await run(['status', 'ok-1', 'pend-1'], { env: svc.env })).code).toBe(5);
    expect((await run(['status', 'pend-1', 'fail-1'], { env: svc.env })).code).toBe(4);
  });

  it('shows several references as a table, with "not found" rows', async () => {
    const r = await run(['status', 'ok-1', 'nope-2', 'pend-1'], { env: svc.env });
    expect(r.code).toBe(6);
    expect(r.stdout).toMatch(/Reference ID.*Status/);
    // Attention first: the success comes after the rows that need someone.
    expect(r.stdout).toMatch(/\nnope-2\tnot found\t.*\npend-1\tpending\t.*\nok-1\tsuccess\t/s);
    expect(r.stderr).toContain(
      '3 payouts: 1 succeeded, 0 failed, 0 canceled, 1 pending, 1 not found',
    );
    const quiet = await run(['status', 'ok-1', 'nope-2', 'pend-1', '--quiet'], { env: svc.env });
    expect(quiet.code).toBe(6);
    expect(quiet.stdout).toBe(r.stdout);
    expect(quiet.stderr).toBe('');
  });

  it('reads references from a CSV report and from stdin, de-duplicated in order', async () => {
    const file = join(svc.home.dir, 'report.csv');
    writeFileSync(
      file,
      'Line;Reference ID;Status\n1;ok-2;success\n2;fail-1;failed\n3;ok-1;success\n',
    );
    const r = await run(['status', 'ok-1', '--from', file, '--json'], { env: svc.env });
    expect(r.code).toBe(4);
    expect(results(r).map((d) => d.reference_id)).toEqual(['ok-1', 'ok-2', 'fail-1']);
    const s = await run(['status', '--from', '-', '--json'], {
      env: svc.env,
      stdin: '# from a pipe\nok-2\n\nok-2\n',
    });
    expect(s.code).toBe(0);
    expect(results(s).map((d) => d.reference_id)).toEqual(['ok-2']);
  });

  it('reads the --report CSV of `payouts send`', async () => {
    const home = tempHome();
    try {
      const report = join(home.dir, 'report.csv');
      const sent = await run(
        ['send', sample('payouts.csv'), '--sandbox', '--yes', '--report', report],
        { env: home.env },
      );
      expect(sent.code).toBe(0);
      const r = await run(['status', '--from', report, '--sandbox', '--json'], { env: home.env });
      expect(r.code).toBe(0);
      const docs = results(r);
      expect(docs.length).toBeGreaterThan(1);
      expect(docs.every((d) => d.status === 'success')).toBe(true);
    } finally {
      home.cleanup();
    }
  });

  it('works with --sandbox without any configuration', async () => {
    const home = tempHome();
    try {
      const r = await run(['status', 'never-created', '--sandbox', '--json'], { env: home.env });
      expect(r.code).toBe(6);
      expect(results(r)).toEqual([NOT_FOUND('never-created')]);
    } finally {
      home.cleanup();
    }
  });

  it('names the way to set credentials when there are none, exit 3', async () => {
    const home = tempHome();
    try {
      const r = await run(['status', 'ok-1'], {
        env: { ...home.env, PAYOUTS_BASE_URL: svc.sandbox.baseUrl },
      });
      expect(r.code).toBe(3);
      expect(r.stderr).toContain('payouts config set-credentials');
      expect(r.stderr).toContain('PAYOUTS_CLIENT_ID');
      expect(r.stderr).toContain('PAYOUTS_CLIENT_SECRET');
    } finally {
      home.cleanup();
    }
  });

  it('exits 3 when the sandbox rejects the credentials', async () => {
    const r = await run(['status', 'ok-1'], {
      env: { ...svc.env, PAYOUTS_CLIENT_SECRET: 'wrong-secret' },
    });
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/rejected the credentials/);
  });

  it('refuses usage mistakes with exit 2', async () => {
    expect((await run(['status'], { env: svc.env })).code).toBe(2);
    expect((await run(['status', 'a', '--concurrency', '0'], { env: svc.env })).code).toBe(2);
    expect((await run(['status', 'a', '--interval', '3'], { env: svc.env })).code).toBe(2);
    const missing = await run(['status', '--from', 'does-not-exist.txt'], { env: svc.env });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('--from does-not-exist.txt: no such file');
  });

  it('has help with examples and exit codes', async () => {
    const r = await run(['status', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Examples:');
    expect(r.stdout).toContain('--watch');
    expect(r.stdout).toMatch(/3 > 7 > 6 > 4 > 5/);
  });
});

describe('payouts status --watch', () => {
  // The sandbox and the CLI share one fake clock: a pending payout settles, and the polls
  // wait, without real time passing.
  const clock = new FakeClock();
  let svc: Awaited<ReturnType<typeof testService>>;

  beforeAll(async () => {
    svc = await testService({ pendingDelayMs: 1_500, now: clock.now });
  });
  afterAll(async () => {
    await svc.close();
  });

  it('polls until the payout settles, logging each change on stderr', async () => {
    await createPayouts(svc.sandbox.baseUrl, [['w-1', 'x+pending@example.com']]);
    const r = await run(['status', 'w-1', 'w-missing', '--watch', '--interval', '0.2'], {
      env: svc.env,
      clock,
    });
    expect(r.code).toBe(6);
    expect(r.stderr).toMatch(/w-1: pending\n/);
    expect(r.stderr).toMatch(/w-missing: not found\n/);
    expect(r.stderr).toMatch(/w-1: pending -> success\n/);
    expect(r.stdout).toMatch(/\nw-1\tsuccess\t/);
  });

  it('prints only the final document with --json', async () => {
    await createPayouts(svc.sandbox.baseUrl, [['w-2', 'x+pending@example.com']]);
    const r = await run(['status', 'w-2', '--watch', '--interval', '0.2', '--json'], {
      env: svc.env,
      clock,
    });
    expect(r.code).toBe(0);
    expect(results(r)).toMatchObject([{ reference_id: 'w-2', status: 'success' }]);
    expect(r.stderr).not.toContain('pending');
  });

  it('stops at --timeout with exit 5 when a payout is still pending', async () => {
    const slowClock = new FakeClock();
    const slow = await testService({ pendingDelayMs: 3_600_000, now: slowClock.now });
    try {
      await createPayouts(slow.sandbox.baseUrl, [['w-3', 'x+pending@example.com']]);
      const started = slowClock.now();
      const r = await run(['status', 'w-3', '--watch', '--interval', '0.2', '--timeout', '1'], {
        env: slow.env,
        clock: slowClock,
      });
      expect(r.code).toBe(5);
      expect(r.stderr).toMatch(/not final yet: w-3/);
      // It stopped at its --timeout of 1 s, not at the default of 600 s.
      expect(slowClock.now() - started).toBeGreaterThanOrEqual(1_000);
      expect(slowClock.now() - started).toBeLessThan(2_000);
    } finally {
      await slow.close();
    }
  });

  it('stops when interrupted, exit 130', async () => {
    const slow = await testService({ pendingDelayMs: 3_600_000 });
    try {
      await createPayouts(slow.sandbox.baseUrl, [['w-4', 'x+pending@example.com']]);
      const interrupt = new AbortController();
      const waiting = new FakeClock();
      const sleep = waiting.sleep;
      // The first wait between polls is where Ctrl-C comes.
      waiting.sleep = (ms, signal) => {
        interrupt.abort();
        return sleep(ms, signal);
      };
      const r = await run(['status', 'w-4', '--watch', '--interval', '5'], {
        env: slow.env,
        clock: waiting,
        interrupt: interrupt.signal,
      });
      expect(r.code).toBe(130);
      expect(r.stderr).toMatch(/w-4: pending/);
      expect(r.stderr).toMatch(/interrupted/);
    } finally {
      await slow.close();
    }
  });
});

describe('payouts status against purpose-built servers', () => {
  const servers: TestServer[] = [];
  const home = tempHome();
  const creds = { PAYOUTS_CLIENT_ID: 'cid', PAYOUTS_CLIENT_SECRET: 'status-test-secret' };

  /** Starts a server and remembers to close it. */
  async function serve(...args: Parameters<typeof startServer>) {
    const s = await startServer(...args);
    servers.push(s);
    return s;
  }
  /** The environment pointing the CLI at a base URL. */
  const envFor = (baseUrl: string, extra: Record<string, string> = {}) => ({
    ...home.env,
    ...creds,
    PAYOUTS_BASE_URL: baseUrl,
    ...extra,
  });

  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });
  afterAll(() => home.cleanup());

  it('keeps at most --concurrency lookups in flight', async () => {
    const s = await serve(async (req, res) => {
      await new Promise((r) => setTimeout(r, 60));
      sendJson(res, 200, recordEnvelope(refOf(req) ?? '?', 'success'));
    });
    const refs = Array.from({ length: 12 }, (_, i) => `c-${i}`);
    const r = await run(['status', ...refs, '--concurrency', '3', '--json'], {
      env: envFor(s.url),
    });
    expect(r.code).toBe(0);
    expect(results(r)).toHaveLength(12);
    expect(s.maxInFlight()).toBe(3);
    expect(s.requests).toHaveLength(12);
  });

  it('retries 5xx and 429 (honouring Retry-After) before answering', async () => {
    const clock = new FakeClock();
    const seenAt: number[] = [];
    const s = await serve((req, res) => {
      seenAt.push(clock.now());
      if (seenAt.length === 1) return sendJson(res, 503, errorEnvelope('busy'));
      if (seenAt.length === 2) {
        return sendJson(res, 429, errorEnvelope('slow down'), { 'retry-after': '1' });
      }
      return sendJson(res, 200, recordEnvelope(refOf(req) ?? '?', 'success'));
    });
    const r = await run(['status', 'r-1', '--json', '--debug'], { env: envFor(s.url), clock });
    expect(r.code).toBe(0);
    expect(s.requests).toHaveLength(3);
    expect((seenAt[2] ?? 0) - (seenAt[1] ?? 0)).toBeGreaterThanOrEqual(1_000);
    expect(r.stderr).toMatch(/retrying r-1 in 1000 ms/);
  });

  it('gives up on a service that keeps failing, exit 7, after a bounded number of attempts', async () => {
    const s = await serve((_req, res) => sendJson(res, 500, errorEnvelope('internal')));
    const r = await run(['status', 'r-1'], { env: envFor(s.url) });
    expect(r.code).toBe(7);
    expect(r.stderr).toMatch(/the service failed \(HTTP 500/);
    expect(s.requests.length).toBeGreaterThan(1);
    expect(s.requests.length).toBeLessThanOrEqual(5);
  });

  it('ranks unreachable (7) above not found (6) when both happen', async () => {
    const s = await serve((req, res) => {
      const ref = refOf(req);
      if (ref === 'broken') return sendJson(res, 502, errorEnvelope('bad gateway'));
      if (ref === 'gone') return sendJson(res, 404, errorEnvelope('Payout not found'));
      return sendJson(res, 200, recordEnvelope(ref ?? '?', 'failed'));
    });
    const r = await run(['status', 'gone', 'broken', 'fine', '--json'], { env: envFor(s.url) });
    expect(r.code).toBe(7);
    const docs = results(r);
    expect(docs[0]).toEqual(NOT_FOUND('gone'));
    expect(docs[1]?.error).toMatch(/HTTP 502/);
    expect(docs[2]?.status).toBe('failed');
  });

  it('stops every lookup at the first credentials error, exit 3', async () => {
    const s = await serve(async (_req, res) => {
      await new Promise((r) => setTimeout(r, 20));
      sendJson(res, 401, errorEnvelope('Invalid API credentials'));
    });
    const refs = Array.from({ length: 30 }, (_, i) => `k-${i}`);
    const r = await run(['status', ...refs, '--concurrency', '2'], { env: envFor(s.url) });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('Invalid API credentials');
    expect(s.requests.length).toBeLessThan(10);
  });

  it('says to check the allowed IP addresses on 403, exit 3', async () => {
    const s = await serve((_req, res) => sendJson(res, 403, errorEnvelope('Forbidden')));
    const r = await run(['status', 'r-1'], { env: envFor(s.url) });
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/IP address is allowed/);
  });

  it('reports an answer that is not JSON, exit 7', async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>maintenance</html>');
    });
    const r = await run(['status', 'r-1'], { env: envFor(s.url) });
    expect(r.code).toBe(7);
    expect(r.stderr).toContain('maintenance');
  });

  it('reports an unreachable service once, exit 7', async () => {
    const s = await serve((_req, res) => res.end());
    const url = s.url;
    await s.close();
    servers.length = 0;
    const r = await run(['status', 'r-1', 'r-2', '--json'], { env: envFor(url) });
    expect(r.code).toBe(7);
    const doc = parseJsonStdout<{ error: { message: string }; results: Doc[] }>(r);
    expect(doc.error.message).toMatch(/could not reach 127\.0\.0\.1:\d+ \(connection refused\)$/);
    // A lookup sends nothing that could be applied: it never says so either way.
    expect(r.stderr).not.toMatch(/nothing was sent|may have been applied|ECONNREFUSED/);
    expect(doc.results.map((d) => d.outcome)).toEqual(['error', 'error']);
    const debug = await run(['status', 'r-1', '--debug'], { env: envFor(url) });
    expect(debug.stderr).toContain('ECONNREFUSED');
  });

  it('says on a terminal what a slow lookup waits for, and nowhere else', async () => {
    const s = await serve(async (req, res) => {
      await new Promise((r) => setTimeout(r, 400));
      sendJson(res, 200, recordEnvelope(refOf(req) ?? '?', 'success'));
    });
    // A 0.6 s timeout makes a lookup slow after 0.3 s (5 s at the default timeout).
    const env = { ...envFor(s.url), PAYOUTS_TIMEOUT: '0.6', NO_COLOR: '1' };
    const tty = await run(['status', 'slow-1'], { env, terminal: { columns: 100 } });
    expect(tty.code).toBe(0);
    // No spinner here (NO_COLOR): one line, with when the lookup times out.
    expect(tty.stderr).toMatch(
      /waiting for 127\.0\.0\.1:\d+ to answer the lookup of slow-1 \(it times out after 0\.6 s\)/,
    );
    const pipe = await run(['status', 'slow-1'], { env });
    expect(pipe.stderr).not.toContain('waiting for');
  });

  it('names a service that never answers as a timeout, with the seconds it waited', async () => {
    const s = await serve(() => {});
    const r = await run(['status', 'r-1'], { env: { ...envFor(s.url), PAYOUTS_TIMEOUT: '0.1' } });
    expect(r.code).toBe(7);
    expect(r.stderr).toMatch(
      /no (complete )?answer from 127\.0\.0\.1:\d+ within 0\.15? s \(timed out\)/,
    );
    expect(r.stderr).not.toMatch(/UND_ERR|lost the connection|may have been applied/);
  });

  it('refuses plain http to a remote host before connecting, exit 2', async () => {
    const r = await run(['status', 'r-1', '--base-url', 'http://remote.invalid'], {
      env: envFor('https://unused.invalid'),
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/plain http/);
    expect(r.stderr).not.toMatch(/could not reach|ENOTFOUND/);
  });

  it('does not follow redirects: names the Location, and the other server gets nothing', async () => {
    const other = await serve((req, res) =>
      sendJson(res, 200, recordEnvelope(refOf(req) ?? '?', 'success')),
    );
    const s = await serve((_req, res) => {
      res.writeHead(302, { location: `${other.url}/` });
      res.end();
    });
    const r = await run(['status', 'r-1'], { env: envFor(s.url) });
    expect(r.code).toBe(7);
    expect(r.stderr).toContain(`${other.url}/`);
    expect(r.stderr).toMatch(/redirects are not followed/);
    expect(s.requests).toHaveLength(1);
    expect(other.requests).toHaveLength(0);
  });

  it('goes through HTTP_PROXY to a service on the network (CONNECT, TLS inside the tunnel)', async () => {
    const server = await startTlsServer();
    const proxy = await startProxy();
    try {
      // The proxy takes any name to 127.0.0.1; the name's certificate is not trusted here.
      const port = new URL(server.url).port;
      const base = `https://pay.invalid:${port}`;
      const via = await run(['status', 'p-1', '--json'], {
        env: envFor(base, { HTTPS_PROXY: proxy.url, HTTP_PROXY: proxy.url }),
      });
      expect(proxy.seen.length).toBeGreaterThan(0);
      expect(new Set(proxy.seen.map((x) => `${x.method} ${x.target}`))).toEqual(
        new Set([`CONNECT pay.invalid:${port}`]),
      );
      expect(via.code).toBe(7);
      expect(via.stderr).toMatch(/SELF_SIGNED|certificate/i);
    } finally {
      await server.close();
      await proxy.close();
    }
  });

  it('never sends the requests of a loopback service through a proxy, whatever NO_PROXY says', async () => {
    const s = await serve((req, res) =>
      sendJson(res, 200, recordEnvelope(refOf(req) ?? '?', 'success')),
    );
    const proxy = await startProxy();
    try {
      for (const base of [s.url, `http://localhost:${s.port}`, `http://127.0.0.2:${s.port}`]) {
        const r = await run(['status', 'p-1'], {
          env: envFor(base, { HTTP_PROXY: proxy.url, HTTPS_PROXY: proxy.url, NO_PROXY: '' }),
        });
        // 127.0.0.2 is loopback too, where the server does not listen.
        expect(r.code, base).toBe(base.includes('127.0.0.2') ? 7 : 0);
      }
      expect(proxy.seen).toEqual([]);
      expect(s.requests).toHaveLength(2);
    } finally {
      await proxy.close();
    }
  });

  it('counts only localhost, 127.0.0.0/8 and [::1] as loopback: plain http to NAME.localhost is refused', async () => {
    const r = await run(['status', 'r-1', '--base-url', 'http://pay.localhost:8080'], {
      env: envFor('https://unused.invalid'),
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/plain http .* only for localhost, 127\.0\.0\.0\/8 and \[::1\]/);
  });

  it('refuses a certificate that no trusted CA signed, exit 7', async () => {
    // Trusting it through NODE_EXTRA_CA_CERTS takes a new process: test/e2e/status.test.ts.
    const server = await startTlsServer();
    try {
      const untrusted = await run(['status', 't-1'], { env: envFor(server.url) });
      expect(untrusted.code).toBe(7);
      expect(untrusted.stderr).toMatch(/SELF_SIGNED|certificate/i);
    } finally {
      await server.close();
    }
  });
});
