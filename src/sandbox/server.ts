/**
 * The sandbox HTTP server: the Payout Service interface on loopback, over node:http, with
 * the ledger for state, deterministic triggers, webhooks and injected faults. The router
 * and its handlers decide the answers; this module wires them to a listening server.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { httpUrl } from '../api/base-url.js';
import { errorCode, errorMessage, UsageError } from '../errors.js';
import { errorAnswer, type Reply } from './answer.js';
import type { SandboxContext } from './context.js';
import { FaultCounter, type FaultRule } from './faults.js';
import { Ledger } from './ledger.js';
import { route } from './router.js';
import { Timers } from './timers.js';
import { BUILT_IN_TRIGGERS, type TriggerRule } from './triggers.js';
import { WebhookSender } from './webhooks.js';

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
  /**
   * Default 30_000: pending payouts settle, and returned ones turn, this long after their
   * creation, unless their trigger says otherwise.
   */
  pendingDelayMs?: number;
  /** Status triggers of the user's own, checked before the built-in ones (triggers.ts). */
  triggers?: TriggerRule[];
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
  /** The delay of a later change whose trigger gives none. */
  pendingDelayMs: number;
  /** The triggers in force, the user's then the built-in ones, in the order they are checked. */
  triggers: readonly TriggerRule[];
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
  for (const t of opts.triggers ?? []) checkCount(`delay of trigger ${t.match}`, t.afterMs);
  checkCount('latency', opts.latencyMs);
  checkCount('max payouts per request', opts.maxPayoutsPerRequest, 1);
  for (const d of opts.webhookRetryDelaysMs ?? []) checkCount('webhook retry delay', d);
  const webhook = opts.defaultWebhookUrl;
  if (webhook !== undefined) {
    httpUrl(
      webhook,
      () =>
        new UsageError(`webhook URL ${JSON.stringify(webhook)} must be an http:// or https:// URL`),
    );
  }
}

/** Handles one request end to end, answering 500 on an unexpected error. */
async function serve(
  ctx: SandboxContext,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const started = ctx.now();
  let reply: Reply;
  try {
    reply = await route(ctx, req);
  } catch (error) {
    ctx.log(`internal error: ${errorMessage(error)}`);
    reply = errorAnswer(500, 'Internal server error');
  }
  await ctx.timers.pause(ctx.latencyMs);
  if (ctx.timers.closed || res.destroyed) return;
  if (reply === 'cut') {
    ctx.log(`${req.method} ${req.url} -> connection cut`);
    req.socket.destroy();
    return;
  }
  const text = JSON.stringify(reply.body);
  res.writeHead(reply.status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
    ...reply.headers,
  });
  res.end(text);
  ctx.log(`${req.method} ${req.url} -> ${reply.status} (${ctx.now() - started} ms)`);
}

/** Listens on host:port, a port in use being a usage error. */
function listen(server: Server, host: string, port: number | undefined): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const onError = (error: Error) => {
      reject(
        errorCode(error) === 'EADDRINUSE'
          ? new UsageError(
              `cannot listen on ${host}:${port}: the port is in use; choose another port, or 0 for a free one`,
            )
          : error,
      );
    };
    server.once('error', onError);
    server.listen(port ?? 0, host, () => {
      server.off('error', onError);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/** Builds the context the handlers share, with the ledger opened. */
async function openContext(opts: SandboxOptions): Promise<SandboxContext> {
  const now = opts.now ?? Date.now;
  const log = opts.log ?? (() => {});
  const prefix = normalizePathPrefix(opts.pathPrefix ?? '');
  const ledger = new Ledger(opts.stateDir, log);
  await ledger.open();
  return {
    ledger,
    faults: new FaultCounter(opts.faults ?? []),
    webhooks: new WebhookSender({
      retryDelaysMs: opts.webhookRetryDelaysMs ?? [1000, 2000, 4000],
      now,
      log,
    }),
    timers: new Timers(),
    now,
    log,
    prefix,
    pendingDelayMs: opts.pendingDelayMs ?? 30_000,
    triggers: [...(opts.triggers ?? []), ...BUILT_IN_TRIGGERS],
    latencyMs: opts.latencyMs ?? 0,
    maxPayoutsPerRequest: opts.maxPayoutsPerRequest,
    defaultWebhookUrl: opts.defaultWebhookUrl,
  };
}

/** Stops serving, then waits for a create in progress to finish its append. */
async function closeSandbox(ctx: SandboxContext, server: Server): Promise<void> {
  if (ctx.timers.closed) return;
  ctx.timers.close();
  ctx.webhooks.close();
  const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeAllConnections();
  await stopped;
  // A create in progress finishes its append and releases the lock before we return.
  await ctx.ledger.idle();
}

/** Starts a sandbox server and resolves once it listens. */
export async function startSandbox(opts: SandboxOptions): Promise<SandboxHandle> {
  checkOptions(opts);
  const host = opts.host ?? '127.0.0.1';
  const ctx = await openContext(opts);
  const server = createServer((req, res) => {
    void serve(ctx, req, res);
  });
  const port = await listen(server, host, opts.port);
  const hostPart = host.includes(':') ? `[${host}]` : host;
  const baseUrl = `http://${hostPart}:${port}${ctx.prefix}`;
  ctx.log(`listening on ${baseUrl}`);
  return {
    baseUrl,
    port,
    requestCounts: () => ctx.faults.snapshot(),
    pendingDelayMs: ctx.pendingDelayMs,
    triggers: ctx.triggers,
    close: () => closeSandbox(ctx, server),
  };
}
