import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { text } from 'node:stream/consumers';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { sample, tempHome } from '../helpers/cli.js';
import {
  errorEnvelope,
  recordEnvelope,
  refOf,
  sendJson,
  startServer,
  type TestServer,
} from '../helpers/http-servers.js';
import { FakeClock, runMain } from '../helpers/main.js';

/** A secret no other text in the CLI's output could contain by chance. */
const SECRET = 'LeakCanary-9c41e07b5fd2-"q\\z';
const SECRET_CORE = 'LeakCanary-9c41e07b5fd2';
const CLIENT_ID = 'leak-test-client';

/** Answers like the service when the secret is right; echoes the request headers on demand. */
function serviceHandler(): Parameters<typeof startServer>[0] {
  return (req, res) => {
    if (req.headers['client-secret'] !== SECRET) {
      return sendJson(res, 401, errorEnvelope('Invalid API credentials'));
    }
    const ref = refOf(req) ?? '';
    // A misbehaving server or proxy that reflects the request headers back.
    if (ref === 'echo-500') return sendJson(res, 500, { success: false, headers: req.headers });
    if (ref === 'echo-400') return sendJson(res, 400, errorEnvelope(JSON.stringify(req.headers)));
    if (ref === 'echo-text') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      return res.end(`you sent ${req.headers['client-secret']}`);
    }
    if (req.method === 'POST') {
      // Fails every payout with a message that reflects the request headers back.
      return text(req).then((body) => {
        const payouts = (JSON.parse(body) as { payouts: Array<{ reference_id: string }> }).payouts;
        sendJson(res, 200, {
          success: true,
          message: [`headers ${JSON.stringify(req.headers)}`],
          data: {
            success_count: 0,
            failed_count: payouts.length,
            results: payouts.map((p) => ({
              reference_id: p.reference_id,
              status: 'failed',
              transaction_id: null,
              charges: 0,
              message: `rejected, you sent ${JSON.stringify(req.headers)}`,
            })),
          },
        });
      });
    }
    if (ref.startsWith('found')) return sendJson(res, 200, recordEnvelope(ref, 'success'));
    if (ref.startsWith('pending')) return sendJson(res, 200, recordEnvelope(ref, 'pending'));
    return sendJson(res, 404, errorEnvelope('Payout not found'));
  };
}

/** Every file under a folder, recursively. */
function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}

describe('the Client-Secret never appears in any output', () => {
  const home = tempHome();
  const servers: Record<string, TestServer> = {};
  const transcripts: Array<{ args: string[]; code: number | null; text: string }> = [];

  /** Runs the CLI in process (retry waits on a fake clock) and keeps everything it wrote. */
  async function run(args: string[], env: Record<string, string> = {}, stdin?: string) {
    const r = await runMain(args, { env: { ...home.env, ...env }, stdin, clock: new FakeClock() });
    transcripts.push({ args, code: r.code, text: `${r.stdout}\n${r.stderr}` });
    return r;
  }

  beforeAll(async () => {
    // config check retries on the real clock: no jitter makes its backoff waits 0 ms.
    vi.spyOn(Math, 'random').mockReturnValue(0);
    servers.good = await startServer(serviceHandler());
    servers.s401 = await startServer((_q, res) =>
      sendJson(res, 401, errorEnvelope('Invalid API credentials')),
    );
    servers.s403 = await startServer((_q, res) =>
      sendJson(res, 403, errorEnvelope('IP not allowed')),
    );
    servers.s500 = await startServer((_q, res) => sendJson(res, 500, errorEnvelope('boom')));
    servers.html = await startServer((_q, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>not json</html>');
    });
    servers.redirect = await startServer((_q, res) => {
      // A redirect that carries the secret, percent-encoded, as a query parameter.
      res.writeHead(302, {
        location: `http://127.0.0.1:9/elsewhere?client_secret=${encodeURIComponent(SECRET)}`,
      });
      res.end();
    });
  });
  afterAll(async () => {
    vi.restoreAllMocks();
    await Promise.all(Object.values(servers).map((s) => s.close()));
    home.cleanup();
  });

  it('runs a broad set of commands with a distinctive secret', async () => {
    const good = servers.good as TestServer;
    // Stored in the profile, from stdin.
    const set = await run(
      [
        'config',
        'set-credentials',
        '--client-id',
        CLIENT_ID,
        '--client-secret-stdin',
        '--base-url',
        good.url,
        '--debug',
      ],
      {},
      `${SECRET}\n`,
    );
    expect(set.code).toBe(0);
    await run(
      [
        'config',
        'set-credentials',
        '--client-id',
        CLIENT_ID,
        '--client-secret-stdin',
        '--base-url',
        'http://x.invalid',
      ],
      {},
      SECRET,
    );
    await run(['config', 'show']);
    await run(['config', 'show', '--json', '--debug']);
    await run(['config', 'path']);
    expect((await run(['config', 'check', '--debug'])).code).toBe(0);
    await run(['config', 'check', '--json']);

    // From the profile.
    expect((await run(['status', 'found-1'])).code).toBe(0);
    await run(['status', 'found-1', '--json', '--debug']);
    expect((await run(['status', 'missing-1', '--debug'])).code).toBe(6);
    await run(['status', 'missing-1', '--json']);
    await run(['status', 'found-1', 'missing-2', 'pending-1', '--debug']);
    await run(['status', 'found-2', '--watch', '--interval', '0.1', '--debug']);
    await run(['status', 'echo-500', 'found-3', '--debug', '--json']);
    await run(['status', 'echo-400', '--debug']);
    await run(['status', 'echo-text', '--debug']);
    await run(['status', 'echo-text', '--json']);

    // From the environment, against services that fail in every way.
    const env = { PAYOUTS_CLIENT_ID: CLIENT_ID, PAYOUTS_CLIENT_SECRET: SECRET };
    for (const name of ['s401', 's403', 's500', 'html', 'redirect']) {
      const url = (servers[name] as TestServer).url;
      const r = await run(['status', 'found-1', '--debug'], { ...env, PAYOUTS_BASE_URL: url });
      expect(r.code).not.toBe(0);
      await run(['status', 'found-1', 'found-2', '--json'], { ...env, PAYOUTS_BASE_URL: url });
      await run(['config', 'check', '--debug', '--json'], { ...env, PAYOUTS_BASE_URL: url });
    }
    await run(['status', 'found-1', '--debug', '--base-url', 'http://remote.invalid'], env);
    await run(['config', 'show', '--debug'], env);

    // send --dry-run, when the send command is there.
    const sendHelp = await runMain(['send', '--help']);
    if (sendHelp.stdout.includes('--dry-run')) {
      await run(['send', sample('payouts.csv'), '--dry-run', '--debug']);
      await run(['send', sample('payouts.csv'), '--dry-run', '--json'], {
        ...env,
        PAYOUTS_BASE_URL: good.url,
      });
    }

    // A real send whose per-result messages reflect the headers, with a report and the journal.
    const report = join(home.dir, 'leak-report.csv');
    const sent = await run(
      [
        'send',
        sample('payouts.csv'),
        '--yes',
        '--debug',
        '--report',
        report,
        '--failed-out',
        `${report}.failed`,
      ],
      { ...env, PAYOUTS_BASE_URL: good.url },
    );
    expect(sent.code).toBe(4);
    await run(['send', sample('payouts.csv'), '--yes', '--json'], {
      ...env,
      PAYOUTS_BASE_URL: good.url,
    });
    await run(['runs', '--json']);
    for (const f of [report, `${report}.failed`]) {
      expect(readFileSync(f, 'utf8')).not.toContain(SECRET_CORE);
    }

    // The secret did reach the service, so the runs above really held it.
    expect(good.requests.some((q) => q.headers['client-secret'] === SECRET)).toBe(true);
    expect(transcripts.length).toBeGreaterThan(30);
    // The debug traces ran and show the redaction.
    expect(transcripts.some((t) => t.text.includes('Client-Secret: [redacted]'))).toBe(true);
  });

  it('refuses a secret that ends with a line break before sending anything, exit 3', async () => {
    const good = servers.good as TestServer;
    const before = good.requests.length;
    const env = {
      PAYOUTS_CLIENT_ID: CLIENT_ID,
      PAYOUTS_CLIENT_SECRET: `${SECRET}\n`,
      PAYOUTS_BASE_URL: good.url,
    };
    const runs = [
      await run(['status', 'found-1', 'found-2', '--debug'], env),
      await run(['status', 'found-1', '--json'], env),
      await run(['send', sample('payouts.csv'), '--yes', '--debug'], env),
      await run(['config', 'check'], env),
    ];
    for (const r of runs) {
      expect(r.code).toBe(3);
      expect(r.stderr).toContain(
        'the Client-Secret from PAYOUTS_CLIENT_SECRET ends with a line break (did `echo` add one?',
      );
      expect(`${r.stdout}\n${r.stderr}`).not.toContain(SECRET_CORE);
    }
    expect(good.requests.length).toBe(before);
  });

  it('leaves no trace of it in stdout, stderr or the state files', () => {
    const leaks = transcripts
      .filter((t) => t.text.includes(SECRET_CORE))
      .map((t) => `payouts ${t.args.join(' ')} (exit ${t.code})`);
    expect(leaks).toEqual([]);
    const stateFiles = filesUnder(join(home.dir, 'state'));
    const leakingFiles = stateFiles.filter((f) => readFileSync(f, 'latin1').includes(SECRET_CORE));
    expect(leakingFiles).toEqual([]);
  });

  it('keeps it only in the config file, readable by the owner alone', () => {
    const files = filesUnder(join(home.dir, 'config'));
    const holding = files.filter((f) => readFileSync(f, 'utf8').includes(SECRET_CORE));
    expect(holding).toHaveLength(1);
    expect(statSync(holding[0] as string).mode & 0o077).toBe(0);
  });
});
