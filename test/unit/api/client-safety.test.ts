import { afterEach, describe, expect, it } from 'vitest';
import { PayoutClient } from '../../../src/api/client.js';
import { checkCredential, headerValueProblem, Secret } from '../../../src/api/secret.js';
import { CredentialsError, NetworkError, RedirectError } from '../../../src/errors.js';
import { type Handler, startServer, type TestServer } from '../../helpers/http-servers.js';

const SECRET = 'cs_live_Zq7w9x';

const servers: TestServer[] = [];
const clients: PayoutClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** A test server on 127.0.0.1, closed after the test. */
async function server(handler: Handler): Promise<TestServer> {
  const s = await startServer(handler);
  servers.push(s);
  return s;
}

/** A client of `url` with the given secret and options. */
function clientOf(
  url: string,
  extra: Partial<ConstructorParameters<typeof PayoutClient>[0]> = {},
): PayoutClient {
  const c = new PayoutClient({
    baseUrl: url,
    clientId: 'id-1',
    clientSecret: new Secret(SECRET),
    userAgent: 'payouts-cli/test',
    ...extra,
  });
  clients.push(c);
  return c;
}

describe('headerValueProblem', () => {
  it.each([
    ['abc\n', /ends with a line break .*echo/],
    ['abc\r\n', /ends with a line break/],
    ['ab\ncd', /holds a line break/],
    ['ab\rcd', /holds a line break/],
    ['abc€', /holds the character U\+20AC, which cannot be sent in an HTTP header/],
    ['a\u0000b', /holds the control character U\+0000/],
    ['a\u007fb', /holds the control character U\+007F/],
    ['é', /U\+00E9/],
    ['x😀', /U\+1F600/],
    [' abc', /starts with a space or tab/],
    ['\tabc', /starts with a space or tab/],
    ['abc ', /ends with a space or tab/],
    ['', /is empty/],
  ])('refuses %j', (value, reason) => {
    expect(headerValueProblem(value)).toMatch(reason);
  });

  it.each(['abc', 'a b\tc', '!"#$%&\'()*+,-./0123456789:;<=>?@AZ[\\]^_`az{|}~'])(
    'accepts %j',
    (value) => {
      expect(headerValueProblem(value)).toBeUndefined();
    },
  );
});

describe('checkCredential', () => {
  it('names the secret and where it came from, never its value', () => {
    const err = (() => {
      try {
        checkCredential({
          name: 'Client-Secret',
          value: `${SECRET}\n`,
          from: 'PAYOUTS_CLIENT_SECRET',
          fix: 'set it again',
        });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(CredentialsError);
    const message = (err as Error).message;
    expect(message).toMatch(
      /^the Client-Secret from PAYOUTS_CLIENT_SECRET ends with a line break .*: set it again$/,
    );
    expect(message).not.toContain(SECRET);
  });

  it('shows the Client-Id, which is no secret', () => {
    expect(() =>
      checkCredential({ name: 'Client-Id', value: 'id€', from: 'profile "default"' }),
    ).toThrow('the Client-Id "id€" from profile "default" holds the character U+20AC');
  });
});

describe('PayoutClient refuses credentials it cannot send', () => {
  it.each([
    { clientSecret: new Secret(`${SECRET}\n`) },
    { clientSecret: new Secret(`${SECRET}€`) },
    { clientId: 'id\r\n' },
  ])('before sending anything (%#)', async (bad) => {
    const s = await server((_req, res) => res.end());
    expect(() => clientOf(s.url, bad)).toThrow(CredentialsError);
    await expect(
      PayoutClient.open({
        baseUrl: s.url,
        clientId: 'id-1',
        clientSecret: new Secret(SECRET),
        userAgent: 'payouts-cli/test',
        ...bad,
      }),
    ).rejects.toThrow(CredentialsError);
    expect(s.requests).toHaveLength(0);
  });
});

describe('PayoutClient redacts every text of an answer', () => {
  it("redacts the secret from a redirect's Location, in the error and the --debug trace", async () => {
    const s = await server((_req, res) => {
      res.writeHead(302, { location: `https://x.invalid/?client_secret=${SECRET}` });
      res.end();
    });
    const lines: string[] = [];
    const err = await clientOf(s.url, { trace: (l) => lines.push(l) })
      .getPayout('R1')
      .catch((e: unknown) => e as Error);
    expect(err).toBeInstanceOf(RedirectError);
    expect(err.message).toContain('https://x.invalid/?client_secret=[redacted]');
    const trace = lines.join('\n');
    expect(trace).toContain('< Location: https://x.invalid/?client_secret=[redacted]');
    expect(`${err.message}\n${trace}`).not.toContain(SECRET);
  });

  it('redacts a percent-encoded secret and every header value', async () => {
    const secret = 'a/b+c=d';
    const s = await server((_req, res) => {
      res.writeHead(302, {
        location: `https://x.invalid/?s=${encodeURIComponent(secret)}`,
        'x-echo': [`you sent ${secret}`, 'other'],
      });
      res.end();
    });
    const err = await clientOf(s.url, { clientSecret: new Secret(secret) })
      .getPayout('R1')
      .catch((e: unknown) => e as Error);
    expect(err.message).toContain('https://x.invalid/?s=[redacted]');
    expect(err.message).not.toContain(encodeURIComponent(secret));
  });
});

describe('PayoutClient deadline', () => {
  /** Answers 200 and then one byte of the body every 200 ms, for 6 s. */
  const trickle: Handler = (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    let sent = 0;
    const timer = setInterval(() => {
      sent += 1;
      if (sent >= 30) {
        clearInterval(timer);
        res.end(' ');
      } else res.write(' ');
    }, 200);
    res.on('close', () => clearInterval(timer));
  };

  it('cuts an answer that trickles in, as a request that may have been applied', async () => {
    const s = await server(trickle);
    const err = await clientOf(s.url, { deadlineMs: 500 })
      .createPayouts({
        payouts: [{ reference_id: 'R1', amount: '1.00', currency: 'USD', recipient: 'x' }],
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NetworkError);
    expect((err as NetworkError).code).toBe('PAYOUTS_DEADLINE');
    expect((err as NetworkError).mayHaveBeenApplied).toBe(true);
    expect((err as Error).message).toMatch(
      /no complete answer from 127\.0\.0\.1:\d+ within 0\.5 s/,
    );
  });

  it("stops at the caller's signal, which is not the deadline", async () => {
    const s = await server(trickle);
    const caller = new AbortController();
    setTimeout(() => caller.abort(), 300);
    const err = await clientOf(s.url)
      .getPayout('R1', caller.signal)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NetworkError);
    expect((err as NetworkError).code).not.toBe('PAYOUTS_DEADLINE');
  });
});
