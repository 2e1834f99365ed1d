import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { SandboxContext } from '../../../src/sandbox/context.js';
import { FaultCounter, parseFaultRule } from '../../../src/sandbox/faults.js';
import { matchRoute, route, SANDBOX_CREDENTIALS } from '../../../src/sandbox/router.js';

/** A request as node:http hands it over, with an empty body. */
function request(method: string, url: string, headers: Record<string, string> = {}) {
  return Object.assign(Readable.from([]), { method, url, headers }) as unknown as IncomingMessage;
}

const AUTH = {
  'client-id': SANDBOX_CREDENTIALS.clientId,
  'client-secret': SANDBOX_CREDENTIALS.clientSecret,
};

/** A context whose handlers must not be reached: only the router's own answers are tested. */
function context(faults: string[] = [], prefix = ''): SandboxContext {
  return {
    faults: new FaultCounter(faults.map(parseFaultRule)),
    prefix,
    log: () => {},
  } as Partial<SandboxContext> as SandboxContext;
}

describe('matchRoute', () => {
  it('names the endpoint of a path and decodes the reference', () => {
    expect(matchRoute('/api/v1/payouts', '')).toEqual({ endpoint: 'create' });
    expect(matchRoute('/api/v1/payouts/a%2Fb%20c?x=1', '')).toEqual({
      endpoint: 'status',
      referenceId: 'a/b c',
    });
    expect(matchRoute('/api/v1/payouts/%E0%A4%A', '')).toEqual({ endpoint: 'bad-reference' });
  });

  it('matches only under the prefix, and not a longer segment that starts with it', () => {
    expect(matchRoute('/m/api/v1/payouts', '/m')).toEqual({ endpoint: 'create' });
    expect(matchRoute('/api/v1/payouts', '/m')).toBeUndefined();
    expect(matchRoute('/mx/api/v1/payouts', '/m')).toBeUndefined();
    expect(matchRoute('/api/v1/payouts/', '')).toBeUndefined();
    expect(matchRoute('/api/v1/payouts/a/b', '')).toBeUndefined();
  });
});

describe('route', () => {
  it('answers 404 and 405 before counting the request for fault rules', async () => {
    const ctx = context(['any:1:500']);
    const missing = await route(ctx, request('GET', '/nowhere', AUTH));
    expect(missing).toMatchObject({ status: 404, body: { message: ['Not found'] } });
    const wrong = await route(ctx, request('DELETE', '/api/v1/payouts/x', AUTH));
    expect(wrong).toMatchObject({ status: 405, headers: { Allow: 'GET' } });
    expect(ctx.faults.snapshot()).toEqual({ create: 0, status: 0 });
    const faulted = await route(ctx, request('GET', '/api/v1/payouts/x', AUTH));
    expect(faulted).toMatchObject({ status: 500 });
  });

  it('answers a fault before checking the credentials, and 401 to wrong ones', async () => {
    const ctx = context(['status:1:429:7', 'status:2:cut-before']);
    const limited = await route(ctx, request('GET', '/api/v1/payouts/x'));
    expect(limited).toMatchObject({ status: 429, headers: { 'Retry-After': '7' } });
    expect(await route(ctx, request('GET', '/api/v1/payouts/x'))).toBe('cut');
    const denied = await route(ctx, request('GET', '/api/v1/payouts/x', { 'client-id': 'x' }));
    expect(denied).toMatchObject({ status: 401, body: { message: ['Invalid API credentials'] } });
  });

  it('answers 400 to a reference with bad percent-encoding once authorised', async () => {
    const reply = await route(context(), request('GET', '/api/v1/payouts/%ZZ', AUTH));
    expect(reply).toMatchObject({ status: 400 });
  });
});
