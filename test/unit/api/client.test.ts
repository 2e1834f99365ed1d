import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PayoutClient, type SlowWait } from '../../../src/api/client.js';
import { Secret } from '../../../src/api/secret.js';
import {
  ForbiddenError,
  InvalidCredentialsError,
  NetworkError,
  NotFoundError,
  RateLimitedError,
  RedirectError,
  RequestRejectedError,
  ServiceError,
  TooLargeError,
  UnparsableResponseError,
} from '../../../src/errors.js';

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void;

let server: Server;
let port: number;
let handler: Handler;
const seen: Array<{
  method?: string;
  url?: string;
  headers: IncomingMessage['headers'];
  body: string;
}> = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => {
      body += d;
    });
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body });
      handler(req, body, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));
afterEach(() => {
  seen.length = 0;
});

function client(
  prefix = '',
  extra: Partial<ConstructorParameters<typeof PayoutClient>[0]> = {},
): PayoutClient {
  return new PayoutClient({
    baseUrl: `http://127.0.0.1:${port}${prefix}`,
    clientId: 'id-123',
    clientSecret: new Secret('s3cret-value'),
    userAgent: 'payouts-cli/test',
    ...extra,
  });
}

function reply(status: number, body: unknown, headers: Record<string, string> = {}): Handler {
  return (_req, _body, res) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(typeof body === 'string' ? body : JSON.stringify(body));
  };
}

const okCreate = {
  success: true,
  message: ['Payouts processed'],
  data: {
    success_count: 1,
    failed_count: 0,
    batch_reference: 'B1',
    results: [
      {
        reference_id: 'R1',
        status: 'success',
        transaction_id: 'T1',
        amount: 10.5,
        currency: 'USD',
        charges: 0.11,
      },
    ],
  },
};
const found = { success: true, message: ['ok'], data: { reference_id: 'R1', status: 'success' } };
const payouts = {
  payouts: [{ reference_id: 'R1', amount: '10.50', currency: 'USD', recipient: 'a@example.com' }],
};

describe('PayoutClient requests', () => {
  it('posts to base URL + /api/v1/payouts keeping a path prefix, with both credential headers and the User-Agent', async () => {
    handler = reply(200, okCreate);
    const c = client('/merchant');
    const res = await c.createPayouts({ ...payouts, batch_reference: 'B1' });
    await c.close();
    expect(res.status).toBe(200);
    expect(res.error).toBeUndefined();
    expect(res.response?.success_count).toBe(1);
    expect(res.response?.results[0]).toMatchObject({
      reference_id: 'R1',
      status: 'success',
      transaction_id: 'T1',
      charges: 0.11,
    });
    const r = seen[0]!;
    expect(r.method).toBe('POST');
    expect(r.url).toBe('/merchant/api/v1/payouts');
    expect(r.headers['client-id']).toBe('id-123');
    expect(r.headers['client-secret']).toBe('s3cret-value');
    expect(r.headers['user-agent']).toBe('payouts-cli/test');
    expect(r.headers['content-type']).toBe('application/json');
  });

  it('writes the amount text into the body exactly, without passing through a double', async () => {
    handler = reply(200, okCreate);
    const c = client();
    await c.createPayouts({
      payouts: [{ reference_id: 'R1', amount: '1234567.10', currency: 'USD', recipient: 'x' }],
    });
    await c.close();
    expect(seen[0]!.body).toContain('"amount":1234567.10,');
  });

  it('gets a payout by URL-encoded reference', async () => {
    handler = reply(200, {
      success: true,
      message: ['ok'],
      data: { reference_id: 'A/B 1', status: 'PENDING' },
    });
    const c = client();
    const rec = await c.getPayout('A/B 1');
    await c.close();
    expect(seen[0]!.url).toBe('/api/v1/payouts/A%2FB%201');
    expect(rec.status).toBe('pending');
  });

  it('keeps no request waiting for a connection: 16 slow creates and 16 lookups at once', async () => {
    // The paces decide what is in flight; a smaller pool would hold the lookups behind creates.
    const held: ServerResponse[] = [];
    let release: () => void = () => {};
    const all = new Promise<void>((r) => {
      release = r;
    });
    handler = (_req, _body, res) => {
      held.push(res);
      if (held.length === 32) release();
    };
    const c = client();
    const creates = Array.from({ length: 16 }, () => c.createPayouts(payouts));
    const lookups = Array.from({ length: 16 }, (_, k) => c.getPayout(`R${k}`));
    await all;
    expect(seen.filter((r) => r.method === 'GET')).toHaveLength(16);
    for (const res of held)
      reply(200, res.req.method === 'GET' ? found : okCreate)(res.req, '', res);
    await Promise.all([...creates, ...lookups]);
    await c.close();
  });
});

describe('PayoutClient answer variations', () => {
  const cases: Array<[string, Handler, (e: unknown) => void]> = [
    [
      'invalid credentials under 401',
      reply(401, { success: false, message: ['Invalid API credentials'], data: [] }),
      (e) => expect(e).toBeInstanceOf(InvalidCredentialsError),
    ],
    [
      'invalid credentials under 200 with message as a string',
      reply(200, { success: false, message: 'Invalid API credentials', data: [] }),
      (e) => expect(e).toBeInstanceOf(InvalidCredentialsError),
    ],
    [
      'payout not found under 404',
      reply(404, { success: false, message: ['Payout not found'], data: [] }),
      (e) => expect(e).toBeInstanceOf(NotFoundError),
    ],
    [
      'payout not found under 200 with data absent',
      reply(200, { success: false, message: ['Payout not found'] }),
      (e) => expect(e).toBeInstanceOf(NotFoundError),
    ],
    // Anything but the spec's envelope under a status below 500 is no proof of "not found".
    [
      'payout not found with data still present, under 200: no proof',
      reply(200, { success: false, message: ['Payout not found'], data: { reference_id: 'R9' } }),
      (e) => expect(e).not.toBeInstanceOf(NotFoundError),
    ],
    [
      'the not-found envelope under 500: a failure, no proof',
      reply(500, { success: false, message: ['Payout not found'], data: [] }),
      (e) => expect(e).toBeInstanceOf(ServiceError),
    ],
    [
      'plain text "Payout not found" under 500: a failure, no proof',
      reply(500, 'Payout not found'),
      (e) => expect(e).toBeInstanceOf(ServiceError),
    ],
    [
      'plain text "Payout not found" under 404: no proof',
      reply(404, 'Payout not found'),
      (e) => expect(e).not.toBeInstanceOf(NotFoundError),
    ],
    [
      'a message that only contains the words: no proof',
      reply(404, { success: false, message: ['Payout not found', 'retry later'], data: [] }),
      (e) => expect(e).not.toBeInstanceOf(NotFoundError),
    ],
    [
      "the message as a string rather than the spec's array: no proof",
      reply(404, { success: false, message: 'Payout not found', data: [] }),
      (e) => expect(e).not.toBeInstanceOf(NotFoundError),
    ],
    [
      '429 with Retry-After seconds',
      reply(
        429,
        { success: false, message: ['Too many requests'], data: [] },
        { 'retry-after': '7' },
      ),
      (e) => {
        expect(e).toBeInstanceOf(RateLimitedError);
        expect((e as RateLimitedError).retryAfterMs).toBe(7000);
      },
    ],
    [
      '500 with a non-JSON body quotes the status and the first 200 characters',
      reply(500, `<html>${'x'.repeat(400)}</html>`),
      (e) => {
        expect(e).toBeInstanceOf(ServiceError);
        expect((e as Error).message).toContain('HTTP 500');
        expect((e as Error).message).toContain('<html>xxx');
        expect((e as Error).message.length).toBeLessThan(320);
      },
    ],
    [
      '200 with a non-JSON body',
      reply(200, 'OK fine'),
      (e) => {
        expect(e).toBeInstanceOf(UnparsableResponseError);
        expect((e as Error).message).toContain('OK fine');
      },
    ],
    [
      '403 names the allowed IP addresses',
      reply(403, { success: false, message: ['Forbidden'], data: [] }),
      (e) => {
        expect(e).toBeInstanceOf(ForbiddenError);
        expect((e as Error).message).toMatch(/IP address is allowed/);
      },
    ],
    [
      '413 is too large',
      reply(413, { success: false, message: ['Payload too large'], data: [] }),
      (e) => expect(e).toBeInstanceOf(TooLargeError),
    ],
    [
      '422 rejects the whole request with the service message',
      reply(422, {
        success: false,
        message: ['payouts.0.amount must be greater than 0'],
        data: [],
      }),
      (e) => {
        expect(e).toBeInstanceOf(RequestRejectedError);
        expect((e as RequestRejectedError).serviceMessages).toEqual([
          'payouts.0.amount must be greater than 0',
        ]);
      },
    ],
    [
      'a redirect is not followed and names the Location',
      reply(302, '', { location: 'https://elsewhere.invalid/api' }),
      (e) => {
        expect(e).toBeInstanceOf(RedirectError);
        expect((e as Error).message).toContain('https://elsewhere.invalid/api');
      },
    ],
  ];
  for (const [name, h, check] of cases) {
    it(name, async () => {
      handler = h;
      const c = client();
      const err = await c.getPayout('R9').catch((e: unknown) => e);
      await c.close();
      check(err);
      expect(seen).toHaveLength(1);
    });
  }

  it('a create answer without results is returned with an unparsable-answer error', async () => {
    handler = reply(200, { success: true, message: ['ok'], data: { success_count: 1 } });
    const c = client();
    const answer = await c.createPayouts(payouts);
    await c.close();
    expect(answer.response).toBeUndefined();
    expect(answer.error).toBeInstanceOf(UnparsableResponseError);
  });

  it('a create answer with success false keeps its results and its error', async () => {
    handler = reply(400, { ...okCreate, success: false, message: ['Daily limit exceeded'] });
    const c = client();
    const answer = await c.createPayouts(payouts);
    await c.close();
    expect(answer.status).toBe(400);
    expect(answer.response?.results).toHaveLength(1);
    expect(answer.error?.message).toMatch(/Daily limit exceeded/);
  });

  it('a connection cut after the request was written may have been applied', async () => {
    handler = (req) => req.socket.destroy();
    const c = client();
    const err = await c.createPayouts(payouts).catch((e: unknown) => e);
    await c.close();
    expect(err).toBeInstanceOf(NetworkError);
    expect((err as NetworkError).mayHaveBeenApplied).toBe(true);
  });

  it('a refused connection was never applied', async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const freePort = (probe.address() as AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const c = new PayoutClient({
      baseUrl: `http://127.0.0.1:${freePort}`,
      clientId: 'id',
      clientSecret: new Secret('s'),
      userAgent: 'payouts-cli/test',
    });
    const err = await c.createPayouts(payouts).catch((e: unknown) => e);
    await c.close();
    expect(err).toBeInstanceOf(NetworkError);
    expect((err as NetworkError).mayHaveBeenApplied).toBe(false);
    expect((err as Error).message).toMatch(/nothing was sent/);
  });

  it('a response timeout may have been applied', async () => {
    handler = () => {};
    const c = client('', { responseTimeoutMs: 200 });
    const err = await c.createPayouts(payouts).catch((e: unknown) => e);
    await c.close();
    expect(err).toBeInstanceOf(NetworkError);
    expect((err as NetworkError).mayHaveBeenApplied).toBe(true);
  });

  it('names a slow answer, once, saying what it waits for and until when; ends the wait', async () => {
    handler = (_req, _body, res) => {
      setTimeout(() => res.writeHead(200).end(JSON.stringify(okCreate)), 150);
    };
    const waits: Array<{ what: string; leftMs: number; timeoutMs: number; ended: boolean }> = [];
    const slow = (w: SlowWait) => {
      const seen = { ...w, ended: false };
      waits.push(seen);
      return () => {
        seen.ended = true;
      };
    };
    const c = client('', { slow, slowAfterMs: 20, responseTimeoutMs: 10_000, deadlineMs: 15_000 });
    await c.createPayouts(payouts);
    await c.getPayout('R 1').catch(() => {});
    await c.close();
    // Each told once while nothing came, counting down to the answer's timeout; the answer's
    // headers and body came at once, so no wait for the body followed.
    expect(waits.map((w) => w.what)).toEqual([
      expect.stringMatching(/^waiting for 127\.0\.0\.1:\d+ to answer a create request$/),
      expect.stringMatching(/^waiting for 127\.0\.0\.1:\d+ to answer the lookup of R 1$/),
    ]);
    for (const w of waits) {
      expect(w.timeoutMs).toBe(10_000);
      expect(w.leftMs).toBeGreaterThan(0);
      expect(w.leftMs).toBeLessThanOrEqual(10_000 - 20);
      expect(w.ended).toBe(true);
    }
  });

  it('counts a trickling answer down to its deadline once its headers came', async () => {
    handler = (_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{');
      setTimeout(() => res.end(JSON.stringify(okCreate).slice(1)), 150);
    };
    const waits: Array<{ what: string; timeoutMs: number }> = [];
    const slow = (w: SlowWait) => {
      waits.push(w);
      return () => {};
    };
    const c = client('', { slow, slowAfterMs: 20, responseTimeoutMs: 10_000, deadlineMs: 15_000 });
    await c.createPayouts(payouts);
    await c.close();
    // Before its headers (a loaded machine may see the 20 ms pass first) an answer counts down
    // to the headers' timeout; once they came, to the whole exchange's deadline.
    const shown = waits.map((w) => w.timeoutMs);
    expect(shown.at(-1)).toBe(15_000);
    expect(shown.filter((ms) => ms !== 10_000 && ms !== 15_000)).toEqual([]);
    expect(shown.filter((ms) => ms === 15_000)).toHaveLength(1);
  });

  it('names a timeout as a timeout, with its seconds, and a lookup without "applied"', async () => {
    handler = () => {};
    const c = client('', { responseTimeoutMs: 200 });
    const create = await c.createPayouts(payouts).catch((e: unknown) => e);
    const lookup = await c.getPayout('R1').catch((e: unknown) => e);
    await c.close();
    expect((create as Error).message).toMatch(
      /^no answer from 127\.0\.0\.1:\d+ within 0\.2 s \(timed out\); the request may have been applied$/,
    );
    expect((lookup as Error).message).toMatch(
      /^no answer from 127\.0\.0\.1:\d+ within 0\.2 s \(timed out\)$/,
    );
    expect((create as NetworkError).code).toBe('UND_ERR_HEADERS_TIMEOUT');
  });

  it('the debug trace redacts the secret', async () => {
    handler = reply(200, okCreate);
    const lines: string[] = [];
    const c = client('', { trace: (l) => lines.push(l) });
    await c.createPayouts(payouts);
    await c.close();
    const text = lines.join('\n');
    expect(text).toContain('> POST');
    expect(text).toContain('< HTTP 200');
    expect(text).toContain('Client-Secret: [redacted]');
    expect(text).not.toContain('s3cret-value');
  });
});

describe('Secret', () => {
  it('never turns into its value as text', () => {
    const s = new Secret('abcdef123456');
    expect(String(s)).toBe('[redacted]');
    expect(JSON.stringify({ s })).toBe('{"s":"[redacted]"}');
    expect(`${s}`).toBe('[redacted]');
    expect(s.masked()).toBe('************');
    expect(s.reveal()).toBe('abcdef123456');
  });

  it('masks with a fixed width, and shows no character of a secret shorter than 16', () => {
    for (const v of ['x', 'abcde', 'abcdefghijklmno'])
      expect(new Secret(v).masked()).toBe('*'.repeat(12));
    expect(new Secret('abcdefghijklmnop').masked()).toBe('********mnop');
    expect(new Secret(`${'a'.repeat(60)}WXYZ`).masked()).toBe('********WXYZ');
  });
});
