import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, tempHome } from '../helpers/cli.js';
import {
  errorEnvelope,
  recordEnvelope,
  refOf,
  sendJson,
  startServer,
  type TestServer,
} from '../helpers/http-servers.js';

// Two representative cases through the real binary, where anything Node itself prints (a
// warning, an uncaught error) would show too; the broad set runs in process:
// test/inprocess/secret-leak.test.ts.

/** A secret no other text in the CLI's output could contain by chance. */
const SECRET = 'LeakCanary-9c41e07b5fd2-"q\\z';
const SECRET_CORE = 'LeakCanary-9c41e07b5fd2';

describe('the Client-Secret never appears in the output of the binary', () => {
  const home = tempHome();
  let server: TestServer;

  beforeAll(async () => {
    server = await startServer((req, res) => {
      if (req.headers['client-secret'] !== SECRET) {
        return sendJson(res, 401, errorEnvelope('Invalid API credentials'));
      }
      const ref = refOf(req) ?? '';
      // A misbehaving server that reflects the request headers back in its error.
      if (ref === 'echo-400') return sendJson(res, 400, errorEnvelope(JSON.stringify(req.headers)));
      return sendJson(res, 200, recordEnvelope(ref, 'success'));
    });
  });
  afterAll(async () => {
    await server.close();
    home.cleanup();
  });

  const env = () => ({
    ...home.env,
    PAYOUTS_CLIENT_ID: 'leak-test-client',
    PAYOUTS_CLIENT_SECRET: SECRET,
    PAYOUTS_BASE_URL: server.url,
  });

  it('--debug traces the request with the secret redacted', async () => {
    const r = await runCli(['status', 'found-1', '--debug'], { env: env() });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('Client-Secret: [redacted]');
    expect(`${r.stdout}\n${r.stderr}`).not.toContain(SECRET_CORE);
    // The secret did reach the service, so the run really held it.
    expect(server.requests.at(-1)?.headers['client-secret']).toBe(SECRET);
  });

  it('an error whose message reflects the secret back shows it redacted', async () => {
    const r = await runCli(['status', 'echo-400', '--debug', '--json'], { env: env() });
    expect(r.code).toBe(7);
    expect(r.stderr).toContain('(HTTP 400: {');
    expect(r.stderr).toContain('"client-secret":"[redacted]"');
    expect(JSON.parse(r.stdout).error.message).toContain('"client-secret":"[redacted]"');
    expect(`${r.stdout}\n${r.stderr}`).not.toContain(SECRET_CORE);
  });
});
