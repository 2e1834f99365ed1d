/**
 * The sandbox HTTP server: the Payout Service interface on loopback, over node:http, with
 * the ledger for state, deterministic triggers, webhooks and injected faults.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { UsageError } from '../errors.js';
import { payoutAmountTexts } from './amount-text.js';
import { FaultCounter, type FaultRule, type SandboxEndpoint } from './faults.js';
import { Ledger, type LedgerLine, payoutRecord, type StoredPayout } from './ledger.js';
import {
  chargesMinor,
  checkPayout,
  DUPLICATE_MESSAGE,
  minorToNumber,
  type PayoutStatus,
  referenceOf,
  triggeredStatus,
  triggerMessage,
} from './payout-rules.js';
import { WebhookSender } from './webhooks.js';

/** The demo credentials the sandbox accepts: public values, printed on purpose. */
export const SANDBOX_CREDENTIALS = {
  clientId: 'sandbox-client-id',
  clientSecret: 'sandbox-client-secret',
};

/** Options of a sandbox server. */
export interface SandboxOptions {
  /** The CLI's XDG state folder (…/payouts); the sandbox keeps its files in `${stateDir}/sandbox/`. */
  stateDir: string;
  /** Default '127.0.0.1'; anything that is not loopback is refused. */
  host?: string;
  /** Default 0 (a free port). */
  port?: number;
  /** e.g. '/merchant' -> endpoints at /merchant/api/v1/...; default ''. */
  pathPrefix?: string;
  /** Default 30_000: pending payouts read back as success after this. */
  pendingDelayMs?: number;
  /** The account's default webhook URL; none by default. */
  defaultWebhookUrl?: string;
  /** Default [1000, 2000, 4000]. */
  webhookRetryDelaysMs?: number[];
  /** Added before every answer. */
  latencyMs?: number;
  /** More payouts than this in one request -> HTTP 413, nothing applied. */
  maxPayoutsPerRequest?: number;
  faults?: FaultRule[];
  /** Clock, for tests. */
  now?: () => number;
  log?: (line: string) => void;
}

/** A running sandbox. */
export interface SandboxHandle {
  /** e.g. http://127.0.0.1:PORT[prefix] */
  baseUrl: string;
  port: number;
  /** Stops serving, drops keep-alive connections and cancels timers and webhooks. */
  close(): Promise<void>;
  /** Requests received so far by endpoint (counted as for fault rules). */
  requestCounts(): { create: number; status: number };
}

/** The error envelope of the interface (part 7). */
interface ErrorEnvelope {
  success: false;
  message: [string];
  data: [];
}

/** An answer to send: status, envelope and extra headers. */
interface Answer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** A create result (interface 2.4), with the reason of a failure. */
interface CreateResult {
  reference_id: unknown;
  status: PayoutStatus;
  transaction_id: string | null;
  amount: number | null;
  currency: string | null;
  charges: number;
  message?: string;
}

/** Largest request body read, so a runaway client cannot exhaust memory. */
const MAX_BODY_BYTES = 64 * 1024 * 1024;

/** Builds an error envelope answer. */
export function errorAnswer(
  status: number,
  text: string,
  headers?: Record<string, string>,
): Answer {
  const body: ErrorEnvelope = { success: false, message: [text], data: [] };
  return { status, body, headers };
}

/** A new transaction id: sbx_txn_ and 20 hex characters. */
export function newTransactionId(): string {
  return `sbx_txn_${randomBytes(10).toString('hex')}`;
}

/** A new batch reference, for requests that carry none. */
export function newBatchReference(): string {
  return `sbx_batch_${randomBytes(8).toString('hex')}`;
}

/** Whether a listen host is a loopback address, the only kind the sandbox binds to. */
export function isLoopbackListenHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host);
}

/** Normalises a path prefix: '' or '/' -> '', '/merchant/' -> '/merchant'. */
export function normalizePathPrefix(prefix: string): string {
  const p = prefix.trim().replace(/\/+$/, '');
  if (p === '') return '';
  if (!/^(\/[A-Za-z0-9._~!$&'()*+,;=:@%-]+)+$/.test(p)) {
    throw new UsageError(
      `path prefix ${JSON.stringify(prefix)} must be a URL path such as /merchant (no query, spaces or empty segments)`,
    );
  }
  return p;
}

/** Whether a value is an http(s) URL. */
export function isHttpUrl(value: string): boolean {
  try {
    const u = new URL(value);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}

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

/** Checks a non-negative whole number option. */
function checkCount(name: string, value: number | undefined, min = 0): void {
  if (value !== undefined && (!Number.isSafeInteger(value) || value < min)) {
    throw new UsageError(`${name} must be a whole number from ${min}, got ${value}`);
  }
}

/** Validates the options, throwing UsageError with the first problem. */
function checkOptions(opts: SandboxOptions): void {
  const host = opts.host ?? '127.0.0.1';
  if (!isLoopbackListenHost(host)) {
    throw new UsageError(
      `the sandbox listens on loopback only (127.0.0.1, ::1 or localhost), not ${JSON.stringify(host)}`,
    );
  }
  checkCount('port', opts.port);
  if (opts.port !== undefined && opts.port > 65535) {
    throw new UsageError(`port must be at most 65535, got ${opts.port}`);
  }
  checkCount('pending delay', opts.pendingDelayMs);
  checkCount('latency', opts.latencyMs);
  checkCount('max payouts per request', opts.maxPayoutsPerRequest, 1);
  for (const d of opts.webhookRetryDelaysMs ?? []) checkCount('webhook retry delay', d);
  if (opts.defaultWebhookUrl !== undefined && !isHttpUrl(opts.defaultWebhookUrl)) {
    throw new UsageError(
      `webhook URL ${JSON.stringify(opts.defaultWebhookUrl)} must be an http:// or https:// URL`,
    );
  }
}

/** Starts a sandbox server and resolves once it listens. */
export async function startSandbox(opts: SandboxOptions): Promise<SandboxHandle> {
  checkOptions(opts);
  const host = opts.host ?? '127.0.0.1';
  const prefix = normalizePathPrefix(opts.pathPrefix ?? '');
  const now = opts.now ?? Date.now;
  const log = opts.log ?? (() => {});
  const pendingDelayMs = opts.pendingDelayMs ?? 30_000;
  const ledger = new Ledger(opts.stateDir, log);
  await ledger.open();
  const faults = new FaultCounter(opts.faults ?? []);
  const webhooks = new WebhookSender({
    retryDelaysMs: opts.webhookRetryDelaysMs ?? [1000, 2000, 4000],
    now,
    log,
  });
  const timers = new Set<NodeJS.Timeout>();
  let closed = false;

  /** Runs `fn` after `ms`, unless the server closes first. */
  const later = (ms: number, fn: () => void): void => {
    if (closed) return;
    const timer = setTimeout(() => {
      timers.delete(timer);
      fn();
    }, ms);
    timer.unref();
    timers.add(timer);
  };

  /** Waits `ms` (the configured latency); never resolves once closed, as the socket is gone. */
  const pause = (ms: number): Promise<void> =>
    ms > 0 ? new Promise((resolve) => later(ms, resolve)) : Promise.resolve();

  /** Sends the webhooks of freshly stored payouts, and arms the pending -> success ones. */
  const notify = (stored: StoredPayout[], url: string | undefined): void => {
    if (!url) return;
    for (const p of stored) {
      // As created: even with a zero delay, a pending payout is announced as pending first.
      webhooks.send(url, payoutRecord(p, Number.NEGATIVE_INFINITY));
      if (p.status === 'pending' && p.settles_at) {
        const settlesAt = Date.parse(p.settles_at);
        later(Math.max(0, settlesAt - now()), () => webhooks.send(url, payoutRecord(p, settlesAt)));
      }
    }
  };

  /** Handles a create request whose credentials were accepted. */
  const create = async (raw: string, cut: boolean): Promise<Answer> => {
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      return errorAnswer(400, 'Invalid JSON body');
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      return errorAnswer(422, 'The request body must be a JSON object with a payouts array');
    }
    const req = body as Record<string, unknown>;
    if (req.payouts === undefined || req.payouts === null) {
      return errorAnswer(422, 'payouts is required: a non-empty array of payout objects');
    }
    if (!Array.isArray(req.payouts)) return errorAnswer(422, 'payouts must be an array');
    if (req.payouts.length === 0) return errorAnswer(422, 'payouts must not be empty');
    const webhookUrl = req.webhook_url ?? undefined;
    if (webhookUrl !== undefined && (typeof webhookUrl !== 'string' || !isHttpUrl(webhookUrl))) {
      return errorAnswer(422, 'webhook_url must be an http:// or https:// URL');
    }
    const batchRef = req.batch_reference ?? undefined;
    if (batchRef !== undefined && typeof batchRef !== 'string') {
      return errorAnswer(422, 'batch_reference must be a string');
    }
    const max = opts.maxPayoutsPerRequest;
    if (max !== undefined && req.payouts.length > max) {
      return errorAnswer(413, `Too many payouts in one request: at most ${max}`);
    }
    const items = req.payouts as unknown[];
    const amountTexts = payoutAmountTexts(raw);
    const batchReference = batchRef || newBatchReference();
    const { results, stored } = await ledger.commit((isStored) => {
      const lines: LedgerLine[] = [];
      const results: CreateResult[] = [];
      const stored: StoredPayout[] = [];
      const appliedHere = new Set<string>();
      const createdMs = now();
      const createdAt = new Date(createdMs).toISOString();
      items.forEach((item, index) => {
        const o = (typeof item === 'object' && item !== null ? item : {}) as Record<
          string,
          unknown
        >;
        const echo = {
          reference_id: o.reference_id ?? null,
          amount: typeof o.amount === 'number' ? o.amount : null,
          currency: typeof o.currency === 'string' ? o.currency.toUpperCase() : null,
        };
        const ref = referenceOf(item);
        if (ref !== undefined && (isStored(ref) || appliedHere.has(ref))) {
          lines.push({ t: 'duplicate', reference_id: ref, at: createdAt });
          results.push({
            ...echo,
            status: 'failed',
            transaction_id: null,
            charges: 0,
            message: DUPLICATE_MESSAGE,
          });
          return;
        }
        const checked = checkPayout(item, amountTexts.get(index));
        if (!checked.ok) {
          const message = checked.reasons.join('; ');
          results.push({ ...echo, status: 'failed', transaction_id: null, charges: 0, message });
          return;
        }
        const v = checked.payout;
        const status = triggeredStatus(v.recipient);
        const message = triggerMessage(status);
        const p: StoredPayout = {
          reference_id: v.reference_id,
          status,
          amount: v.amount,
          minor: v.minor.toString(),
          currency: v.currency,
          recipient: v.recipient,
          description: v.description,
          transaction_id: newTransactionId(),
          charges: chargesMinor(status, v.minor).toString(),
          created_at: createdAt,
          ...(status === 'pending'
            ? { settles_at: new Date(createdMs + pendingDelayMs).toISOString() }
            : {}),
          batch_reference: batchReference,
          ...(message ? { message } : {}),
        };
        appliedHere.add(v.reference_id);
        stored.push(p);
        lines.push({ t: 'payout', ...p });
        results.push({
          reference_id: p.reference_id,
          status,
          transaction_id: p.transaction_id,
          amount: p.amount,
          currency: p.currency,
          charges: minorToNumber(BigInt(p.charges), v.digits),
          ...(message ? { message } : {}),
        });
      });
      return { lines, value: { results, stored } };
    });
    notify(stored, (webhookUrl as string | undefined) ?? opts.defaultWebhookUrl);
    const succeeded = results.filter((r) => r.status === 'success' || r.status === 'pending');
    log(
      `created ${stored.length} of ${results.length} payouts (${succeeded.length} success or pending, ${results.length - succeeded.length} failed or canceled)${cut ? '; cutting the connection (fault)' : ''}`,
    );
    return {
      status: 200,
      body: {
        success: true,
        message: ['Payouts processed'],
        data: {
          success_count: succeeded.length,
          failed_count: results.length - succeeded.length,
          batch_reference: batchReference,
          results,
        },
      },
    };
  };

  /** Handles a status request whose credentials were accepted. */
  const status = async (referenceId: string): Promise<Answer> => {
    await ledger.refresh();
    const entry = ledger.get(referenceId);
    if (!entry) return errorAnswer(404, 'Payout not found');
    return {
      status: 200,
      body: {
        success: true,
        message: ['Payout retrieved'],
        data: payoutRecord(entry.payout, now()),
      },
    };
  };

  /** Answers a fault that stops the request before anything is applied. */
  const faultAnswer = (rule: FaultRule): Answer | 'cut' => {
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
  };

  /** Decides the answer of one request, or 'cut' to drop the connection without one. */
  const respond = async (req: IncomingMessage): Promise<Answer | 'cut'> => {
    const body = await readBody(req, MAX_BODY_BYTES);
    if (body === undefined) {
      return errorAnswer(413, `Request body too large: at most ${MAX_BODY_BYTES} bytes`, {
        Connection: 'close',
      });
    }
    const route = matchRoute(req.url ?? '/', prefix);
    if (!route) return errorAnswer(404, 'Not found');
    const expected = route.endpoint === 'create' ? 'POST' : 'GET';
    if (req.method !== expected) {
      return errorAnswer(405, `Method not allowed: use ${expected}`, { Allow: expected });
    }
    const endpoint: SandboxEndpoint = route.endpoint === 'create' ? 'create' : 'status';
    const fault = faults.next(endpoint);
    if (fault)
      log(`fault ${fault.endpoint}:${fault.nth}:${fault.kind} on ${req.method} ${req.url}`);
    if (fault && fault.kind !== 'cut-after-apply') return faultAnswer(fault);
    // A plain comparison is enough: these are public demo values, not secrets.
    if (
      headerOf(req, 'client-id') !== SANDBOX_CREDENTIALS.clientId ||
      headerOf(req, 'client-secret') !== SANDBOX_CREDENTIALS.clientSecret
    ) {
      return errorAnswer(401, 'Invalid API credentials');
    }
    const cut = fault?.kind === 'cut-after-apply';
    let answer: Answer;
    if (route.endpoint === 'create') answer = await create(body.toString('utf8'), cut);
    else if (route.endpoint === 'status') answer = await status(route.referenceId);
    else answer = errorAnswer(400, 'Invalid reference_id in path: bad percent-encoding');
    return cut ? 'cut' : answer;
  };

  /** Handles one request end to end, answering 500 on an unexpected error. */
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const started = now();
    let answer: Answer | 'cut';
    try {
      answer = await respond(req);
    } catch (error) {
      log(`internal error: ${error instanceof Error ? error.message : String(error)}`);
      answer = errorAnswer(500, 'Internal server error');
    }
    await pause(opts.latencyMs ?? 0);
    if (closed || res.destroyed) return;
    if (answer === 'cut') {
      log(`${req.method} ${req.url} -> connection cut`);
      req.socket.destroy();
      return;
    }
    const text = JSON.stringify(answer.body);
    res.writeHead(answer.status, {
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': Buffer.byteLength(text),
      ...answer.headers,
    });
    res.end(text);
    log(`${req.method} ${req.url} -> ${answer.status} (${now() - started} ms)`);
  };

  const server = createServer((req, res) => {
    void handle(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      reject(
        error.code === 'EADDRINUSE'
          ? new UsageError(
              `cannot listen on ${host}:${opts.port}: the port is in use; choose another port, or 0 for a free one`,
            )
          : error,
      );
    };
    server.once('error', onError);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const hostPart = host.includes(':') ? `[${host}]` : host;
  const baseUrl = `http://${hostPart}:${port}${prefix}`;
  log(`listening on ${baseUrl}`);

  return {
    baseUrl,
    port,
    requestCounts: () => faults.snapshot(),
    close: async () => {
      if (closed) return;
      closed = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      webhooks.close();
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await stopped;
      // A create in progress finishes its append and releases the lock before we return.
      await ledger.idle();
    },
  };
}
