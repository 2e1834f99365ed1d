/**
 * Webhook delivery of the sandbox: POSTs one JSON event per stored payout, in the
 * background, retrying on a network error or a non-2xx answer, then giving up.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { parseHttpUrl } from '../api/base-url.js';
import { errorCode } from '../errors.js';
import type { PayoutRecord } from './ledger.js';
import { Timers } from './timers.js';

/** The body of one webhook call. */
export interface WebhookEvent {
  event: `payout.${PayoutRecord['status']}`;
  /** The same on every retry of one event, so a receiver can drop repeats. */
  event_id: string;
  /** When this attempt was sent. */
  sent_at: string;
  data: PayoutRecord;
}

/** Options of the sender. */
export interface WebhookSenderOptions {
  /** Waits before each retry; the number of retries is its length. */
  retryDelaysMs: readonly number[];
  now: () => number;
  log: (line: string) => void;
  /** Deliveries in flight at once (default 8), so a large batch does not flood a receiver. */
  concurrency?: number;
  /** Time allowed for one attempt (default 10 s). */
  timeoutMs?: number;
}

/** A new event id: sbx_evt_ and 20 hex characters. */
export function newEventId(): string {
  return `sbx_evt_${randomBytes(10).toString('hex')}`;
}

/** Delivers webhook events in the background; close() stops everything at once. */
export class WebhookSender {
  private readonly timers = new Timers();
  private readonly requests = new Set<http.ClientRequest>();
  private readonly waiting: Array<() => void> = [];
  private active = 0;
  // Own agents without keep-alive: no idle socket outlives a delivery or holds the process.
  private readonly httpAgent = new http.Agent({ keepAlive: false });
  private readonly httpsAgent = new https.Agent({ keepAlive: false });

  constructor(private readonly opts: WebhookSenderOptions) {}

  /** Queues the delivery of one event for a payout record; returns at once. */
  send(url: string, record: PayoutRecord): void {
    this.attempt(
      url,
      { event: `payout.${record.status}`, event_id: newEventId(), data: record },
      0,
    );
  }

  /** Stops retries and queued deliveries and aborts those in flight. */
  close(): void {
    this.timers.close();
    this.waiting.length = 0;
    for (const r of this.requests) r.destroy();
    this.requests.clear();
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }

  /** Runs attempt number `n` (0 is the first) when a delivery slot is free. */
  private attempt(url: string, event: Omit<WebhookEvent, 'sent_at'>, n: number): void {
    if (this.timers.closed) return;
    const run = async () => {
      this.active += 1;
      const outcome = await this.post(url, {
        ...event,
        sent_at: new Date(this.opts.now()).toISOString(),
      });
      this.active -= 1;
      this.waiting.shift()?.();
      if (this.timers.closed) return;
      const what = `webhook ${event.event} ${event.data.reference_id} to ${url}`;
      if (outcome === 'ok') {
        this.opts.log(`${what}: delivered`);
        return;
      }
      const delay = this.opts.retryDelaysMs[n];
      if (delay === undefined) {
        this.opts.log(`${what}: ${outcome}; gave up after ${n + 1} attempts`);
        return;
      }
      this.opts.log(`${what}: ${outcome}; retrying in ${delay} ms`);
      this.timers.later(delay, () => this.attempt(url, event, n + 1));
    };
    if (this.active < (this.opts.concurrency ?? 8)) void run();
    else this.waiting.push(() => void run());
  }

  /** POSTs one event; resolves 'ok' on a 2xx answer, else a description of the failure. */
  private post(url: string, event: WebhookEvent): Promise<string> {
    return new Promise((resolve) => {
      const target = parseHttpUrl(url);
      if (typeof target === 'string') {
        resolve('not an http(s) URL');
        return;
      }
      const secure = target.protocol === 'https:';
      const body = JSON.stringify(event);
      const req = (secure ? https : http).request(target, {
        method: 'POST',
        agent: secure ? this.httpsAgent : this.httpAgent,
        timeout: this.opts.timeoutMs ?? 10_000,
        headers: {
          'Content-Type': 'application/json',
          'Content-Length': Buffer.byteLength(body),
          'User-Agent': 'payouts-sandbox',
        },
      });
      this.requests.add(req);
      const done = (outcome: string) => {
        this.requests.delete(req);
        resolve(outcome);
      };
      req.on('response', (res) => {
        res.resume();
        const code = res.statusCode ?? 0;
        res.on('end', () => done(code >= 200 && code < 300 ? 'ok' : `HTTP ${code}`));
        res.on('error', (e) => done(e.message));
      });
      req.on('timeout', () => req.destroy(new Error('timed out')));
      req.on('error', (e) => done(errorCode(e) ?? e.message));
      req.end(body);
    });
  }
}
