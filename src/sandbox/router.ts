/**
 * The sandbox's router: matches method and path to a handler, answers 404 and 405, applies
 * injected faults and checks the credentials before any handler runs.
 */
import type { IncomingMessage } from 'node:http';
import { type Answer, errorAnswer, type Reply } from './answer.js';
import type { SandboxContext } from './context.js';
import type { FaultRule, SandboxEndpoint } from './faults.js';
import { handleCreate } from './handlers/create.js';
import { handleStatus } from './handlers/status.js';

/** The demo credentials the sandbox accepts: public values, printed on purpose. */
export const SANDBOX_CREDENTIALS = {
  clientId: 'sandbox-client-id',
  clientSecret: 'sandbox-client-secret',
};

/** Largest request body read, so a runaway client cannot exhaust memory. */
const MAX_BODY_BYTES = 64 * 1024 * 1024;

/** The route a request path names, before its method is considered. */
export type Route =
  | { endpoint: 'create' }
  | { endpoint: 'status'; referenceId: string }
  | { endpoint: 'bad-reference' }
  | undefined;

/** Matches a request target (path and query) against the endpoints under `prefix`. */
export function matchRoute(target: string, prefix: string): Route {
  const path = target.split('?')[0] ?? '';
  if (prefix && !path.startsWith(`${prefix}/`)) return undefined;
  const rest = path.slice(prefix.length);
  if (rest === '/api/v1/payouts') return { endpoint: 'create' };
  const base = '/api/v1/payouts/';
  if (!rest.startsWith(base)) return undefined;
  const segment = rest.slice(base.length);
  if (segment === '' || segment.includes('/')) return undefined;
  try {
    return { endpoint: 'status', referenceId: decodeURIComponent(segment) };
  } catch {
    return { endpoint: 'bad-reference' };
  }
}

/** The method a route takes. */
function methodOf(route: NonNullable<Route>): 'POST' | 'GET' {
  return route.endpoint === 'create' ? 'POST' : 'GET';
}

/** Reads a request body up to `limit` bytes; undefined when it is larger. */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) over = true;
      else parts.push(chunk);
    });
    req.on('end', () => resolve(over ? undefined : Buffer.concat(parts)));
    req.on('error', reject);
  });
}

/** Reads one header value. */
function headerOf(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Whether the request carries the sandbox credentials. */
function authorized(req: IncomingMessage): boolean {
  // A plain comparison is enough: these are public demo values, not secrets.
  return (
    headerOf(req, 'client-id') === SANDBOX_CREDENTIALS.clientId &&
    headerOf(req, 'client-secret') === SANDBOX_CREDENTIALS.clientSecret
  );
}

/** Answers a fault that stops the request before anything is applied. */
function faultAnswer(rule: FaultRule): Reply {
  switch (rule.kind) {
    case 'http500':
      return errorAnswer(500, 'Internal server error');
    case 'http429':
      return errorAnswer(429, 'Too many requests', {
        'Retry-After': String(rule.retryAfterSeconds ?? 1),
      });
    case 'http413':
      return errorAnswer(413, 'Request entity too large');
    default:
      return 'cut';
  }
}

/** Runs the handler of a matched, authorised request. */
function dispatch(
  ctx: SandboxContext,
  route: NonNullable<Route>,
  body: Buffer,
  cut: boolean,
): Promise<Answer> {
  if (route.endpoint === 'create') return handleCreate(ctx, body.toString('utf8'), cut);
  if (route.endpoint === 'status') return handleStatus(ctx, route.referenceId);
  return Promise.resolve(errorAnswer(400, 'Invalid reference_id in path: bad percent-encoding'));
}

/** Decides the reply to one request. */
export async function route(ctx: SandboxContext, req: IncomingMessage): Promise<Reply> {
  const body = await readBody(req, MAX_BODY_BYTES);
  if (body === undefined) {
    return errorAnswer(413, `Request body too large: at most ${MAX_BODY_BYTES} bytes`, {
      Connection: 'close',
    });
  }
  const matched = matchRoute(req.url ?? '/', ctx.prefix);
  if (!matched) return errorAnswer(404, 'Not found');
  const expected = methodOf(matched);
  if (req.method !== expected) {
    return errorAnswer(405, `Method not allowed: use ${expected}`, { Allow: expected });
  }
  const endpoint: SandboxEndpoint = matched.endpoint === 'create' ? 'create' : 'status';
  const fault = ctx.faults.next(endpoint);
  if (fault)
    ctx.log(`fault ${fault.endpoint}:${fault.nth}:${fault.kind} on ${req.method} ${req.url}`);
  if (fault && fault.kind !== 'cut-after-apply') return faultAnswer(fault);
  if (!authorized(req)) return errorAnswer(401, 'Invalid API credentials');
  const cut = fault?.kind === 'cut-after-apply';
  const answer = await dispatch(ctx, matched, body, cut);
  return cut ? 'cut' : answer;
}
