import { text } from 'node:stream/consumers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sample, tempHome } from '../helpers/cli.js';
import { startServer, type TestServer } from '../helpers/http-servers.js';
import { FakeClock, runMain } from '../helpers/main.js';

// A service that echoes the Client-Secret back the way JSON encoders write it: PHP escapes
// `/` as `\/`, .NET writes `+` as `\u002B`, and any character may be a \uXXXX escape in
// either case. Decoded, each is the secret itself: none may reach stdout or stderr.

const SECRET = 'Esc/Canary+7f3a9b2c41d0=Zq';
const CORE = '7f3a9b2c41d0';
const CLIENT_ID = 'escape-test-client';

/** `c` as a JSON \uXXXX escape, its hex digits in upper or lower case. */
const u = (c: string, upper: boolean) => {
  const hex = c.charCodeAt(0).toString(16).padStart(4, '0');
  return `\\u${upper ? hex.toUpperCase() : hex}`;
};

/** The secret as JSON encoders write it inside a string literal. */
const FORMS = {
  php: SECRET.replace(/\//g, '\\/'),
  dotnet: SECRET.replace(/\+/g, '\\u002B'),
  every: [...SECRET].map((c) => u(c, false)).join(''),
  mixed: [...SECRET].map((c, i) => (i % 3 === 0 ? u(c, i % 2 === 0) : c)).join(''),
  // A JSON document quoted inside a JSON string: the escapes are escaped once more.
  nested: SECRET.replace(/\//g, '\\\\\\/').replace(/\+/g, '\\\\u002b'),
};
const ALL = Object.values(FORMS).join(' ');

/** Writes a JSON answer from text, so that its escapes are sent as written. */
function raw(res: Parameters<Parameters<typeof startServer>[0]>[1], status: number, body: string) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(body);
}

/** Echoes the secret in every form, wherever an answer can hold text. */
function echoService(): Parameters<typeof startServer>[0] {
  return async (req, res) => {
    if (req.headers['client-secret'] !== SECRET) {
      return raw(res, 401, '{"success":false,"message":["Invalid API credentials"],"data":[]}');
    }
    const ref = decodeURIComponent((req.url ?? '').split('/').pop() ?? '');
    if (req.method === 'POST') {
      const payouts = (JSON.parse(await text(req)) as { payouts: Array<{ reference_id: string }> })
        .payouts;
      const results = payouts.map(
        (p) =>
          `{"reference_id":"${p.reference_id}","status":"failed","transaction_id":null,"charges":0,"message":"you sent ${ALL}"}`,
      );
      return raw(
        res,
        200,
        `{"success":true,"message":["headers ${ALL}"],"data":{"success_count":0,"failed_count":${payouts.length},"results":[${results.join(',')}]}}`,
      );
    }
    if (ref === 'echo-record') {
      return raw(
        res,
        200,
        `{"success":true,"message":["${FORMS.php}"],"data":{"reference_id":"echo-record","status":"success","description":"${ALL}","${FORMS.dotnet}":"${FORMS.every}","notes":["${FORMS.mixed}",{"x":"${FORMS.nested}"}]}}`,
      );
    }
    if (ref === 'echo-400') {
      return raw(res, 400, `{"success":false,"message":["you sent ${ALL}"],"data":[]}`);
    }
    if (ref === 'echo-text') {
      res.writeHead(502, { 'content-type': 'text/plain' });
      return res.end(`upstream said {"secret":"${ALL}"}`);
    }
    if (ref === 'echo-location') {
      res.writeHead(302, { location: `https://x.invalid/?s=${FORMS.dotnet}&t=${FORMS.every}` });
      return res.end();
    }
    return raw(res, 404, '{"success":false,"message":["Payout not found"],"data":[]}');
  };
}

describe('the Client-Secret, echoed in any JSON escape, never reaches the output', () => {
  const home = tempHome();
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer(echoService());
  });
  afterAll(async () => {
    await server.close();
    home.cleanup();
  });

  const env = () => ({
    ...home.env,
    PAYOUTS_CLIENT_ID: CLIENT_ID,
    PAYOUTS_CLIENT_SECRET: SECRET,
    PAYOUTS_BASE_URL: server.url,
  });

  it.each([
    ['status', 'echo-record'],
    ['status', 'echo-record', '--json'],
    ['status', 'echo-record', 'echo-400', 'echo-text', 'echo-location'],
    ['status', 'echo-400'],
    ['status', 'echo-400', '--json'],
    ['status', 'echo-text'],
    ['status', 'echo-location'],
    ['send', sample('payouts.csv'), '--yes'],
    ['send', sample('payouts.csv'), '--yes', '--json'],
  ])('payouts %s %s …', async (...args) => {
    for (const extra of [[], ['--debug']]) {
      const r = await runMain([...args, ...extra], { env: env(), clock: new FakeClock() });
      const out = `${r.stdout}\n${r.stderr}`;
      expect(out).not.toContain(CORE);
      expect(out).not.toContain(SECRET);
      for (const [name, form] of Object.entries(FORMS)) {
        expect(out, `the ${name} form`).not.toContain(form);
      }
    }
    // The service saw the secret: the runs above were answered by it.
    expect(server.requests.length).toBeGreaterThan(0);
  });
});
