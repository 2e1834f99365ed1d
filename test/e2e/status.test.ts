import { readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PayoutClient } from '../../src/api/client.js';
import { Secret } from '../../src/api/secret.js';
import { SANDBOX_CREDENTIALS } from '../../src/sandbox/index.js';
import { fixture, parseJsonStdout, runCli, sample, spawnCli, tempHome } from '../helpers/cli.js';
import {
  errorEnvelope,
  recordEnvelope,
  refOf,
  sendJson,
  startProxy,
  startServer,
  type TestServer,
} from '../helpers/http-servers.js';
import { testService } from '../helpers/sandbox.js';

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

interface Doc {
  reference_id: string;
  status?: string;
  error?: string;
  [k: string]: unknown;
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
    const r = await runCli(['status', 'ok-1'], { env: { ...svc.env, TZ: 'Asia/Tokyo' } });
    expect(r.code).toBe(0);
    for (const re of [
      /Reference ID\s+ok-1/,
      /Status\s+success/,
      /Amount\s+12\.50 USD/,
      /Recipient\s+ann@example\.com/,
      /Description\s+payout ok-1/,
      /Transaction ID\s+\S+/,
      /Created at\s+\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z \(local \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} \+09:00\)/,
      /Updated at\s+\S+Z \(local .* \+09:00\)/,
    ]) {
      expect(r.stdout).toMatch(re);
    }
  });

  it('prints exactly the payout record with --json', async () => {
    const r = await runCli(['status', 'ok-1', '--json'], { env: svc.env });
    expect(r.code).toBe(0);
    const doc = parseJsonStdout<Doc>(r);
    expect(doc).toMatchObject({
      reference_id: 'ok-1',
      status: 'success',
      amount: 12.5,
      currency: 'USD',
      recipient: 'ann@example.com',
      description: 'payout ok-1',
    });
    expect(typeof doc.transaction_id).toBe('string');
    expect(typeof doc.created_at).toBe('string');
    expect(typeof doc.updated_at).toBe('string');
  });

  it('prints an array for several references, in order, and exits 4 for failed/canceled', async () => {
    const r = await runCli(['status', 'ok-1', 'fail-1', 'cancel-1', '--json'], { env: svc.env });
    expect(r.code).toBe(4);
    const docs = parseJsonStdout<Doc[]>(r);
    expect(docs.map((d) => [d.reference_id, d.status])).toEqual([
      ['ok-1', 'success'],
      ['fail-1', 'failed'],
      ['cancel-1', 'canceled'],
    ]);
  });

  it('shows a missing reference as {reference_id, error} and exits 6', async () => {
    const one = await runCli(['status', 'nope-1', '--json'], { env: svc.env });
    expect(one.code).toBe(6);
    expect(parseJsonStdout(one)).toEqual({ reference_id: 'nope-1', error: 'Payout not found' });
    const many = await runCli(['status', 'ok-1', 'nope-1', 'fail-1', '--json'], { env: svc.env });
    expect(many.code).toBe(6);
    expect(parseJsonStdout<Doc[]>(many)[1]).toEqual({
      reference_id: 'nope-1',
      error: 'Payout not found',
    });
  });

  it('exits 5 while a payout is pending, and 4 beats 5', async () => {
    expect((await runCli(['status', 'pend-1'], { env: svc.env })).code).toBe(5);
    expect((await runCli(['status', 'ok-1', 'pend-1'], { env: svc.env })).code).toBe(5);
    expect((await runCli(['status', 'pend-1', 'fail-1'], { env: svc.env })).code).toBe(4);
  });

  it('shows several references as a table, with "not found" rows', async () => {
    const r = await runCli(['status', 'ok-1', 'nope-2', 'pend-1'], { env: svc.env });
    expect(r.code).toBe(6);
    expect(r.stdout).toMatch(/Reference ID.*Status/);
    expect(r.stdout).toMatch(/ok-1\s*│\s*success/);
    expect(r.stdout).toMatch(/nope-2\s*│\s*not found/);
    expect(r.stdout).toMatch(/pend-1\s*│\s*pending/);
    expect(r.stderr).toContain('1 success, 1 not found, 1 pending');
  });

  it('reads references from a CSV report and from stdin, de-duplicated in order', async () => {
    const file = join(svc.home.dir, 'report.csv');
    writeFileSync(
      file,
      'Line;Reference ID;Status\n1;ok-2;success\n2;fail-1;failed\n3;ok-1;success\n',
    );
    const r = await runCli(['status', 'ok-1', '--from', file, '--json'], { env: svc.env });
    expect(r.code).toBe(4);
    expect(parseJsonStdout<Doc[]>(r).map((d) => d.reference_id)).toEqual([
      'ok-1',
      'ok-2',
      'fail-1',
    ]);
    const s = await runCli(['status', '--from', '-', '--json'], {
      env: svc.env,
      stdin: '# from a pipe\nok-2\n\nok-2\n',
    });
    expect(s.code).toBe(0);
    // --from always gives an array, even for one reference.
    expect(parseJsonStdout<Doc[]>(s).map((d) => d.reference_id)).toEqual(['ok-2']);
  });

  it('reads the --report CSV of `payouts send`', async () => {
    const home = tempHome();
    try {
      const report = join(home.dir, 'report.csv');
      const sent = await runCli(
        ['send', sample('payouts.csv'), '--sandbox', '--yes', '--report', report],
        {
          env: home.env,
        },
      );
      expect(sent.code).toBe(0);
      const r = await runCli(['status', '--from', report, '--sandbox', '--json'], {
        env: home.env,
      });
      expect(r.code).toBe(0);
      const docs = parseJsonStdout<Doc[]>(r);
      expect(docs.length).toBeGreaterThan(1);
      expect(docs.every((d) => d.status === 'success')).toBe(true);
    } finally {
      home.cleanup();
    }
  });

  it('works with --sandbox without any configuration', async () => {
    const home = tempHome();
    try {
      const r = await runCli(['status', 'never-created', '--sandbox', '--json'], { env: home.env });
      expect(r.code).toBe(6);
      expect(parseJsonStdout(r)).toEqual({
        reference_id: 'never-created',
        error: 'Payout not found',
      });
    } finally {
      home.cleanup();
    }
  });

  it('names the way to set credentials when there are none, exit 3', async () => {
    const home = tempHome();
    try {
      const r = await runCli(['status', 'ok-1'], {
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
    const r = await runCli(['status', 'ok-1'], {
      env: { ...svc.env, PAYOUTS_CLIENT_SECRET: 'wrong-secret' },
    });
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/rejected the credentials/);
  });

  it('refuses usage mistakes with exit 2', async () => {
    expect((await runCli(['status'], { env: svc.env })).code).toBe(2);
    expect((await runCli(['status', 'a', '--concurrency', '0'], { env: svc.env })).code).toBe(2);
    expect((await runCli(['status', 'a', '--interval', '3'], { env: svc.env })).code).toBe(2);
    const missing = await runCli(['status', '--from', 'does-not-exist.txt'], { env: svc.env });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('--from does-not-exist.txt: no such file');
  });

  it('has help with examples and exit codes', async () => {
    const r = await runCli(['status', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Examples:');
    expect(r.stdout).toContain('--watch');
    expect(r.stdout).toMatch(/3 > 7 > 6 > 4 > 5/);
  });
});

describe('payouts status --watch', () => {
  let svc: Awaited<ReturnType<typeof testService>>;

  beforeAll(async () => {
    svc = await testService({ pendingDelayMs: 1_500 });
  });
  afterAll(async () => {
    await svc.close();
  });

  it('polls until the payout settles, logging each change on stderr', async () => {
    await createPayouts(svc.sandbox.baseUrl, [['w-1', 'x+pending@example.com']]);
    const r = await runCli(['status', 'w-1', 'w-missing', '--watch', '--interval', '0.2'], {
      env: svc.env,
    });
    expect(r.code).toBe(6);
    expect(r.stderr).toMatch(/w-1: pending\n/);
    expect(r.stderr).toMatch(/w-missing: not found\n/);
    expect(r.stderr).toMatch(/w-1: pending -> success\n/);
    expect(r.stdout).toMatch(/w-1\s*│\s*success/);
  });

  it('prints only the final document with --json', async () => {
    await createPayouts(svc.sandbox.baseUrl, [['w-2', 'x+pending@example.com']]);
    const r = await runCli(['status', 'w-2', '--watch', '--interval', '0.2', '--json'], {
      env: svc.env,
    });
    expect(r.code).toBe(0);
    expect(parseJsonStdout<Doc>(r)).toMatchObject({ reference_id: 'w-2', status: 'success' });
    expect(r.stderr).not.toContain('pending');
  });

  it('stops at --timeout with exit 5 when a payout is still pending', async () => {
    const slow = await testService({ pendingDelayMs: 3_600_000 });
    try {
      await createPayouts(slow.sandbox.baseUrl, [['w-3', 'x+pending@example.com']]);
      const started = Date.now();
      const r = await runCli(['status', 'w-3', '--watch', '--interval', '0.2', '--timeout', '1'], {
        env: slow.env,
      });
      expect(r.code).toBe(5);
      expect(r.stderr).toMatch(/not final yet: w-3/);
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      await slow.close();
    }
  });

  it('stops on SIGINT with exit 130', async () => {
    await createPayouts(svc.sandbox.baseUrl, [['w-4', 'x+pending@example.com']]);
    const slow = await testService({ pendingDelayMs: 3_600_000 });
    try {
      await createPayouts(slow.sandbox.baseUrl, [['w-4', 'x+pending@example.com']]);
      const child = spawnCli(['status', 'w-4', '--watch', '--interval', '5'], { env: slow.env });
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (d: string) => {
        stderr += d;
      });
      child.stdin.end();
      for (let i = 0; i < 200 && !stderr.includes('w-4: pending'); i++) {
        await new Promise((r) => setTimeout(r, 50));
      }
      const exited = new Promise<number | null>((resolve) =>
        child.on('close', (code) => resolve(code)),
      );
      child.kill('SIGINT');
      expect(await exited).toBe(130);
      expect(stderr).toMatch(/interrupted/);
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
    const r = await runCli(['status', ...refs, '--concurrency', '3', '--json'], {
      env: envFor(s.url),
    });
    expect(r.code).toBe(0);
    expect(parseJsonStdout<Doc[]>(r)).toHaveLength(12);
    expect(s.maxInFlight()).toBe(3);
    expect(s.requests).toHaveLength(12);
  });

  it('retries 5xx and 429 (honouring Retry-After) before answering', async () => {
    let n = 0;
    const s = await serve((req, res) => {
      n += 1;
      if (n === 1) return sendJson(res, 503, errorEnvelope('busy'));
      if (n === 2) return sendJson(res, 429, errorEnvelope('slow down'), { 'retry-after': '1' });
      return sendJson(res, 200, recordEnvelope(refOf(req) ?? '?', 'success'));
    });
    const r = await runCli(['status', 'r-1', '--json', '--debug'], { env: envFor(s.url) });
    expect(r.code).toBe(0);
    expect(s.requests).toHaveLength(3);
    const gap = (s.requests[2]?.at ?? 0) - (s.requests[1]?.at ?? 0);
    expect(gap).toBeGreaterThanOrEqual(950);
    expect(r.stderr).toMatch(/retrying r-1 in 1000 ms/);
  });

  it('gives up on a service that keeps failing, exit 7, after a bounded number of attempts', async () => {
    const s = await serve((_req, res) => sendJson(res, 500, errorEnvelope('internal')));
    const r = await runCli(['status', 'r-1'], { env: envFor(s.url) });
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
    const r = await runCli(['status', 'gone', 'broken', 'fine', '--json'], { env: envFor(s.url) });
    expect(r.code).toBe(7);
    const docs = parseJsonStdout<Doc[]>(r);
    expect(docs[0]).toEqual({ reference_id: 'gone', error: 'Payout not found' });
    expect(docs[1]?.error).toMatch(/HTTP 502/);
    expect(docs[2]?.status).toBe('failed');
  });

  it('stops every lookup at the first credentials error, exit 3', async () => {
    const s = await serve(async (_req, res) => {
      await new Promise((r) => setTimeout(r, 20));
      sendJson(res, 401, errorEnvelope('Invalid API credentials'));
    });
    const refs = Array.from({ length: 30 }, (_, i) => `k-${i}`);
    const r = await runCli(['status', ...refs, '--concurrency', '2'], { env: envFor(s.url) });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('Invalid API credentials');
    expect(s.requests.length).toBeLessThan(10);
  });

  it('says to check the allowed IP addresses on 403, exit 3', async () => {
    const s = await serve((_req, res) => sendJson(res, 403, errorEnvelope('Forbidden')));
    const r = await runCli(['status', 'r-1'], { env: envFor(s.url) });
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/IP address is allowed/);
  });

  it('reports an answer that is not JSON, exit 7', async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>maintenance</html>');
    });
    const r = await runCli(['status', 'r-1'], { env: envFor(s.url) });
    expect(r.code).toBe(7);
    expect(r.stderr).toContain('maintenance');
  });

  it('reports an unreachable service once, exit 7', async () => {
    const s = await serve((_req, res) => res.end());
    const url = s.url;
    await s.close();
    servers.length = 0;
    const r = await runCli(['status', 'r-1', 'r-2', '--json'], { env: envFor(url) });
    expect(r.code).toBe(7);
    expect(parseJsonStdout<{ error: { message: string } }>(r).error.message).toMatch(
      /could not reach 127\.0\.0\.1:\d+ \(ECONNREFUSED\)/,
    );
  });

  it('refuses plain http to a remote host before connecting, exit 2', async () => {
    const r = await runCli(['status', 'r-1', '--base-url', 'http://remote.invalid'], {
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
    const r = await runCli(['status', 'r-1'], { env: envFor(s.url) });
    expect(r.code).toBe(7);
    expect(r.stderr).toContain(`${other.url}/`);
    expect(r.stderr).toMatch(/redirects are not followed/);
    expect(s.requests).toHaveLength(1);
    expect(other.requests).toHaveLength(0);
  });

  it('goes through HTTP_PROXY (undici tunnels with CONNECT, even for http://), and NO_PROXY bypasses it', async () => {
    const s = await serve((req, res) =>
      sendJson(res, 200, recordEnvelope(refOf(req) ?? '?', 'success')),
    );
    const proxy = await startProxy();
    try {
      const base = `http://localhost:${s.port}`;
      const via = await runCli(['status', 'p-1', '--json'], {
        env: envFor(base, { HTTP_PROXY: proxy.url, HTTPS_PROXY: proxy.url }),
      });
      expect(via.code).toBe(0);
      expect(proxy.seen).toEqual([{ method: 'CONNECT', target: `localhost:${s.port}` }]);
      expect(s.requests.map((q) => q.url)).toEqual(['/api/v1/payouts/p-1']);

      const direct = await runCli(['status', 'p-2', '--json'], {
        env: envFor(base, { HTTP_PROXY: proxy.url, NO_PROXY: 'example.invalid,localhost' }),
      });
      expect(direct.code).toBe(0);
      expect(proxy.seen).toHaveLength(1);
      expect(s.requests).toHaveLength(2);
    } finally {
      await proxy.close();
    }
  });

  it('trusts a private CA only through NODE_EXTRA_CA_CERTS', async () => {
    const server = createHttpsServer(
      {
        cert: readFileSync(fixture('status', 'tls-cert.pem')),
        key: readFileSync(fixture('status', 'tls-key.pem')),
      },
      (req, res) => sendJson(res, 200, recordEnvelope(refOf(req) ?? '?', 'success')),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      const base = `https://127.0.0.1:${port}`;
      const untrusted = await runCli(['status', 't-1'], { env: envFor(base) });
      expect(untrusted.code).toBe(7);
      expect(untrusted.stderr).toMatch(/SELF_SIGNED|certificate/i);
      const trusted = await runCli(['status', 't-1', '--json'], {
        env: envFor(base, { NODE_EXTRA_CA_CERTS: fixture('status', 'tls-cert.pem') }),
      });
      expect(trusted.code).toBe(0);
      expect(parseJsonStdout<Doc>(trusted).status).toBe('success');
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('sends loopback requests through the proxy too when NO_PROXY does not list them', async () => {
    const s = await serve((req, res) =>
      sendJson(res, 200, recordEnvelope(refOf(req) ?? '?', 'success')),
    );
    const proxy = await startProxy();
    try {
      const r = await runCli(['status', 'p-3'], { env: envFor(s.url, { HTTP_PROXY: proxy.url }) });
      expect(r.code).toBe(0);
      expect(proxy.seen.map((x) => x.target)).toEqual([`127.0.0.1:${s.port}`]);
    } finally {
      await proxy.close();
    }
  });
});
