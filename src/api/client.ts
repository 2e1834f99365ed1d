import { Agent, type Dispatcher, EnvHttpProxyAgent } from 'undici';
import { errorCode, errorMessage, InternalError, NetworkError } from '../errors.js';
import { isLoopbackUrl, loopbackLookup } from './base-url.js';
import { serializeCreateRequest } from './body.js';
import {
  parseAnswer,
  type RawResponse,
  readCreateAnswer,
  readPayoutRecord,
  snippet,
} from './envelope.js';
import { checkCredential, Redactor, type Secret } from './secret.js';
import { type SlowWait, watchSlow } from './slow.js';
import type { CreateAnswer, CreateRequest, PayoutRecord } from './types.js';

export type { SlowWait };

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
  /**
   * Time allowed for a whole exchange, from connecting to the answer's last byte (default:
   * connect plus response timeout plus 5 s): an answer that trickles in never trips the others.
   */
  deadlineMs?: number;
  proxy?: ProxySettings;
  /** Receives the --debug trace, with the secret already redacted. */
  trace?: (line: string) => void;
  /**
   * Told when an answer is slower than `slowAfterMs`: what the exchange waits for and how long
   * until it is given up, for a countdown; the function it returns ends the wait (the answer
   * came, or the exchange was given up). Told again when the answer's headers come and its
   * body is left the rest of the deadline.
   */
  slow?: (wait: SlowWait) => () => void;
  /** When an exchange counts as slow (default SLOW_MS). */
  slowAfterMs?: number;
}

/**
 * Connections to one service at most: the paces decide how many requests are in flight, and
 * a smaller pool would queue some behind others unseen (a read-back's lookups behind a send's
 * slow creates). 64 creates (--max-concurrency's top) and 16 lookups; opened only when used.
 */
const CONNECTIONS = 80;

/** An exchange slower than this is told to `slow`, so a person sees what the run waits for. */
export const SLOW_MS = 5_000;

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

/** What failed, in words, for the codes that say something a person can act on. */
const REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'no such host',
  EAI_AGAIN: 'the host name could not be looked up',
  EHOSTUNREACH: 'no route to the host',
  ENETUNREACH: 'no route to the network',
  EADDRNOTAVAIL: 'the address is not available',
  ECONNRESET: 'the connection was reset',
  EPIPE: 'the connection was closed',
  UND_ERR_SOCKET: 'the connection was closed',
  UND_ERR_CLOSED: 'the connection was closed',
  UND_ERR_INVALID_ARG: 'the request could not be made',
  UND_ERR_ABORTED: 'the request was stopped',
  ABORT_ERR: 'the request was stopped',
};

/** The end of a create request's error that never reached the service (see finishRun's use). */
export const NOTHING_SENT = '; nothing was sent';

/** Codes of undici's timeouts (the connect timeout is not among them: nothing was sent). */
const ANSWER_TIMEOUTS = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/** What an exchange was, for the words of its failure: a create request, or a lookup. */
export interface ExchangeKind {
  /** A create request: the words say whether it may have been applied. */
  create: boolean;
  /** Seconds the client waits to connect, and for an answer, for the words of a timeout. */
  connectSeconds?: number;
  answerSeconds?: number;
}

/**
 * Describes a failed exchange in plain words: a timeout as a timeout with the seconds it
 * waited, the library's codes left to --debug (NetworkError.code). Only a create request says
 * whether it may have been applied: a lookup changes nothing, whatever became of it.
 */
export function classifyNetworkError(
  err: unknown,
  url: string,
  kind: ExchangeKind = { create: true },
): NetworkError {
  const code = errorCode(err);
  const notSent = code !== undefined && NOT_SENT_CODES.has(code);
  const host = new URL(url).host;
  const within = (s: number | undefined) => (s === undefined ? '' : ` within ${s} s`);
  let words: string;
  if (code === 'UND_ERR_CONNECT_TIMEOUT') {
    words = `could not connect to ${host}${within(kind.connectSeconds)} (timed out)`;
  } else if (code !== undefined && ANSWER_TIMEOUTS.has(code)) {
    words = `no answer from ${host}${within(kind.answerSeconds)} (timed out)`;
  } else {
    const reason = code === undefined ? errorMessage(err) : (REASONS[code] ?? plainCode(code));
    words = notSent
      ? `could not reach ${host} (${reason})`
      : `lost the connection to ${host} before an answer (${reason})`;
  }
  if (kind.create) {
    words += notSent ? NOTHING_SENT : '; the request may have been applied';
  }
  return new NetworkError(words, !notSent, code);
}

/** A code shown to people: a system or TLS code as it is, undici's own only under --debug. */
function plainCode(code: string): string {
  return code.startsWith('UND_ERR') ? 'the connection failed' : code;
}

/** The error of an exchange cut by the client's overall deadline. */
function deadlineError(url: string, deadlineMs: number, create: boolean): NetworkError {
  // The request may have been written in full before the cut, so the service may have applied it.
  const applied = create ? '; the request may have been applied' : '';
  return new NetworkError(
    `no complete answer from ${new URL(url).host} within ${deadlineMs / 1000} s (timed out)${applied}`,
    true,
    'PAYOUTS_DEADLINE',
  );
}

/** Replaces the secret, in every form a JSON or URL encoder can give it, with "[redacted]". */
export function redactSecret(text: string, secret: string): string {
  return new Redactor(secret).text(text);
}

/** The answer's headers with the secret redacted from every value (a Location may carry it). */
function redactHeaders(
  headers: RawResponse['headers'],
  redactor: Redactor,
): RawResponse['headers'] {
  const out: RawResponse['headers'] = {};
  for (const [name, value] of Object.entries(headers)) {
    out[name] = Array.isArray(value)
      ? value.map((v) => redactor.text(v))
      : value === undefined
        ? undefined
        : redactor.text(value);
  }
  return out;
}

/**
 * A body decoded as JSON, undefined when it is not JSON. When the raw text holds the secret in
 * any form (`redactor` given), every decoded string is redacted: decoding the unredacted text
 * keeps the JSON whole whatever the secret's characters. Any string that decodes to the secret
 * is written in the raw text in a form Redactor finds, so a body without one needs no walk.
 */
function decodeBody(body: string, redactor: Redactor | undefined): RawResponse['json'] {
  if (body === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return undefined;
  }
  return { value: redactor === undefined ? value : redactor.value(value) };
}

/** undici's connect and answer timeouts for these options. */
function timeoutsOf(opts: ClientOptions) {
  return {
    connect: { timeout: opts.connectTimeoutMs ?? 10_000 },
    headersTimeout: opts.responseTimeoutMs ?? 30_000,
    bodyTimeout: opts.responseTimeoutMs ?? 30_000,
  };
}

/** A connection pool straight to the service; to a loopback one without any lookup. */
function directAgent(opts: ClientOptions): Agent {
  const timeouts = timeoutsOf(opts);
  const lookup = isLoopbackUrl(opts.baseUrl) ? { lookup: loopbackLookup } : {};
  return new Agent({
    ...timeouts,
    connect: { ...timeouts.connect, ...lookup },
    connections: CONNECTIONS,
  });
}

/** The overall deadline of one exchange for these options. */
function deadlineOf(opts: ClientOptions): number {
  return (
    opts.deadlineMs ??
    (opts.connectTimeoutMs ?? 10_000) + (opts.responseTimeoutMs ?? 30_000) + 5_000
  );
}

/** Refuses credentials undici cannot send: it would fail every request with them. */
function checkHeaders(opts: ClientOptions): void {
  const from = 'the client options';
  checkCredential({ name: 'Client-Id', value: opts.clientId, from });
  checkCredential({ name: 'Client-Secret', value: opts.clientSecret.reveal(), from });
}

/**
 * The Payout Service client: the only code that speaks HTTP. It sends the credentials on
 * every request, never follows redirects, and turns every answer into a typed result or
 * a typed error. No text of an answer (body or header) reaches its caller holding the secret.
 */
export class PayoutClient {
  private readonly dispatcher: Dispatcher;
  private readonly apiBase: string;
  private readonly redactor: Redactor;
  private readonly deadlineMs: number;

  /**
   * Opens a client, through undici's proxy agent when a proxy is configured; never for a
   * loopback base URL, whose plain http would hand the Client-Secret to the proxy.
   */
  static async open(opts: ClientOptions): Promise<PayoutClient> {
    const p = opts.proxy ?? {};
    if (isLoopbackUrl(opts.baseUrl) || (!p.httpProxy && !p.httpsProxy)) {
      return new PayoutClient({ ...opts, proxy: undefined });
    }
    return new PayoutClient(
      opts,
      new EnvHttpProxyAgent({ ...timeoutsOf(opts), connections: CONNECTIONS, ...p }),
    );
  }

  /** A client without a proxy, or with the proxy agent that `open` made. */
  constructor(
    private readonly opts: ClientOptions,
    dispatcher?: Dispatcher,
  ) {
    if (dispatcher === undefined && (opts.proxy?.httpProxy || opts.proxy?.httpsProxy)) {
      throw new InternalError('a client that goes through a proxy is made by PayoutClient.open');
    }
    checkHeaders(opts);
    this.redactor = new Redactor(opts.clientSecret.reveal());
    this.deadlineMs = deadlineOf(opts);
    this.apiBase = `${opts.baseUrl}/api/v1`;
    this.dispatcher = dispatcher ?? directAgent(opts);
  }

  /** The URL a create request goes to. */
  get createUrl(): string {
    return `${this.apiBase}/payouts`;
  }

  /**
   * Sends one create request and returns the answer as read, whatever its status: what it
   * proves is decided by core/send/verdict.ts. Throws NetworkError when no answer came.
   */
  async createPayouts(body: CreateRequest, signal?: AbortSignal): Promise<CreateAnswer> {
    const res = await this.exchange('POST', this.createUrl, serializeCreateRequest(body), signal);
    return readCreateAnswer(res);
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
    this.traceRequest(method, url, body);
    const started = Date.now();
    const deadline = AbortSignal.timeout(this.deadlineMs);
    const slow =
      this.opts.slow &&
      watchSlow(
        this.opts.slow,
        { method, url, started },
        {
          afterMs: this.opts.slowAfterMs ?? SLOW_MS,
          answerMs: Math.min(this.opts.responseTimeoutMs ?? 30_000, this.deadlineMs),
          deadlineMs: this.deadlineMs,
        },
      );
    let res: RawResponse;
    try {
      const target = new URL(url);
      const r = await this.dispatcher.request({
        origin: target.origin,
        path: `${target.pathname}${target.search}`,
        method,
        headers,
        body,
        signal: signal === undefined ? deadline : AbortSignal.any([signal, deadline]),
      });
      slow?.answered();
      // A server or proxy that echoes the request headers must not make us print the secret:
      // the body is decoded first and its strings redacted, and the raw text is redacted too.
      const text = await r.body.text();
      const shown = this.redactor.text(text);
      res = {
        status: r.statusCode,
        headers: redactHeaders(r.headers, this.redactor),
        body: shown,
        json: decodeBody(text, shown === text ? undefined : this.redactor),
        receivedAt: Date.now(),
      };
    } catch (err) {
      const create = method === 'POST';
      const ne =
        deadline.aborted && !signal?.aborted
          ? deadlineError(url, this.deadlineMs, create)
          : classifyNetworkError(err, url, {
              create,
              connectSeconds: (this.opts.connectTimeoutMs ?? 10_000) / 1000,
              answerSeconds: (this.opts.responseTimeoutMs ?? 30_000) / 1000,
            });
      this.opts.trace?.(`< ${ne.message}${ne.code ? ` [${ne.code}]` : ''}`);
      throw ne;
    } finally {
      slow?.end();
    }
    this.traceResponse(res, Date.now() - started);
    return res;
  }

  /** Traces a request for --debug, the secret replaced. */
  private traceRequest(method: string, url: string, body: string | undefined): void {
    const trace = this.opts.trace;
    if (!trace) return;
    trace(`> ${method} ${url}`);
    trace(`> Client-Id: ${this.opts.clientId}`);
    trace('> Client-Secret: [redacted]');
    trace(`> User-Agent: ${this.opts.userAgent}`);
    if (body !== undefined) trace(`> ${snippet(body)} (${Buffer.byteLength(body)} bytes)`);
  }

  /** Traces an answer for --debug (already redacted). */
  private traceResponse(res: RawResponse, ms: number): void {
    const trace = this.opts.trace;
    if (!trace) return;
    trace(`< HTTP ${res.status} (${ms} ms)`);
    const location = res.headers.location;
    if (location !== undefined) trace(`< Location: ${String(location)}`);
    trace(`< ${snippet(res.body)}`);
  }
}
