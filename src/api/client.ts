import { Agent, type Dispatcher, EnvHttpProxyAgent } from 'undici';
import { NetworkError } from '../errors.js';
import { serializeCreateRequest } from './body.js';
import {
  type Endpoint,
  parseAnswer,
  type RawResponse,
  readCreateResponse,
  readPayoutRecord,
  snippet,
} from './envelope.js';
import type { Secret } from './secret.js';
import type { CreateRequest, CreateResponse, PayoutRecord } from './types.js';

/** Proxy settings, taken from the environment by the caller. */
export interface ProxySettings {
  httpProxy?: string;
  httpsProxy?: string;
  noProxy?: string;
}

/** Everything the client needs; it reads nothing from the process itself. */
export interface ClientOptions {
  /** Normalised base URL (see normalizeBaseUrl), possibly with a path prefix. */
  baseUrl: string;
  clientId: string;
  clientSecret: Secret;
  userAgent: string;
  connectTimeoutMs?: number;
  /** Time allowed for the answer's headers, and between body chunks. */
  responseTimeoutMs?: number;
  proxy?: ProxySettings;
  /** Receives the --debug trace, with the secret already redacted. */
  trace?: (line: string) => void;
}

/** Error codes that prove the request never reached the service. */
const NOT_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_INVALID_ARG',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
]);

/** The error code of an undici or system error, looking through `cause`. */
function errorCode(err: unknown): string | undefined {
  let e: unknown = err;
  for (let i = 0; i < 4 && e && typeof e === 'object'; i++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && code !== 'UND_ERR') return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/** Describes a failed exchange, saying whether a create request may have been applied. */
export function classifyNetworkError(err: unknown, url: string): NetworkError {
  const code = errorCode(err);
  const notSent = code !== undefined && NOT_SENT_CODES.has(code);
  const what = err instanceof Error ? err.message : String(err);
  const host = new URL(url).host;
  const explain = notSent
    ? `could not reach ${host} (${code ?? what}); nothing was sent`
    : `lost the connection to ${host} before an answer (${code ?? what}); the request may have been applied`;
  return new NetworkError(explain, !notSent, code);
}

/** Replaces the secret, as is and JSON-escaped up to three times over, with "[redacted]". */
export function redactSecret(text: string, secret: string): string {
  if (secret === '') return text;
  let out = text;
  let form = secret;
  for (let level = 0; level < 4; level++) {
    if (out.includes(form)) out = out.split(form).join('[redacted]');
    const next = JSON.stringify(form).slice(1, -1);
    // A secret with nothing JSON escapes has one form only: searching it again finds nothing new.
    if (next === form) break;
    form = next;
  }
  return out;
}

/** undici's connect and answer timeouts for these options. */
function timeoutsOf(opts: ClientOptions) {
  return {
    connect: { timeout: opts.connectTimeoutMs ?? 10_000 },
    headersTimeout: opts.responseTimeoutMs ?? 30_000,
    bodyTimeout: opts.responseTimeoutMs ?? 30_000,
  };
}

/**
 * The Payout Service client: the only code that speaks HTTP. It sends the credentials on
 * every request, never follows redirects, and turns every answer into a typed result or
 * a typed error.
 */
export class PayoutClient {
  private readonly dispatcher: Dispatcher;
  private readonly apiBase: string;

  /** Opens a client, through undici's proxy agent when a proxy is configured. */
  static async open(opts: ClientOptions): Promise<PayoutClient> {
    const p = opts.proxy ?? {};
    if (!p.httpProxy && !p.httpsProxy) return new PayoutClient(opts);
    return new PayoutClient(opts, new EnvHttpProxyAgent({ ...timeoutsOf(opts), ...p }));
  }

  /** A client without a proxy, or with the proxy agent that `open` made. */
  constructor(
    private readonly opts: ClientOptions,
    dispatcher?: Dispatcher,
  ) {
    if (dispatcher === undefined && (opts.proxy?.httpProxy || opts.proxy?.httpsProxy)) {
      throw new Error('internal: a client that goes through a proxy is made by PayoutClient.open');
    }
    this.apiBase = `${opts.baseUrl}/api/v1`;
    this.dispatcher = dispatcher ?? new Agent({ ...timeoutsOf(opts), connections: 16 });
  }

  /** The URL a create request goes to. */
  get createUrl(): string {
    return `${this.apiBase}/payouts`;
  }

  /** Sends one create request. */
  async createPayouts(body: CreateRequest, signal?: AbortSignal): Promise<CreateResponse> {
    const endpoint: Endpoint = { kind: 'create' };
    const res = await this.exchange('POST', this.createUrl, serializeCreateRequest(body), signal);
    const env = parseAnswer(res, endpoint);
    return readCreateResponse(env, res);
  }

  /** Reads one payout by its reference_id. */
  async getPayout(referenceId: string, signal?: AbortSignal): Promise<PayoutRecord> {
    const url = `${this.apiBase}/payouts/${encodeURIComponent(referenceId)}`;
    const res = await this.exchange('GET', url, undefined, signal);
    const env = parseAnswer(res, { kind: 'status', referenceId });
    return readPayoutRecord(env, res, referenceId);
  }

  /** Closes pooled connections. */
  async close(): Promise<void> {
    await this.dispatcher.close();
  }

  private async exchange(
    method: 'GET' | 'POST',
    url: string,
    body: string | undefined,
    signal: AbortSignal | undefined,
  ): Promise<RawResponse> {
    const headers: Record<string, string> = {
      'client-id': this.opts.clientId,
      'client-secret': this.opts.clientSecret.reveal(),
      'user-agent': this.opts.userAgent,
      accept: 'application/json',
    };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const trace = this.opts.trace;
    const started = Date.now();
    if (trace) {
      trace(`> ${method} ${url}`);
      trace(`> Client-Id: ${this.opts.clientId}`);
      trace('> Client-Secret: [redacted]');
      trace(`> User-Agent: ${this.opts.userAgent}`);
      if (body !== undefined) trace(`> ${snippet(body)} (${Buffer.byteLength(body)} bytes)`);
    }
    let res: RawResponse;
    try {
      const target = new URL(url);
      const r = await this.dispatcher.request({
        origin: target.origin,
        path: `${target.pathname}${target.search}`,
        method,
        headers,
        body,
        signal,
      });
      // A server or proxy that echoes the request headers must not make us print the secret.
      const text = redactSecret(await r.body.text(), this.opts.clientSecret.reveal());
      res = { status: r.statusCode, headers: r.headers, body: text, receivedAt: Date.now() };
    } catch (err) {
      const ne = classifyNetworkError(err, url);
      trace?.(`< ${ne.message}`);
      throw ne;
    }
    if (trace) {
      trace(`< HTTP ${res.status} (${Date.now() - started} ms)`);
      trace(`< ${snippet(res.body)}`);
    }
    return res;
  }
}
