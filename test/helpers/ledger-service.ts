import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterEach } from 'vitest';
import { tempHome } from './cli.js';
import { refOf, sendJson, startServer, type TestServer } from './http-servers.js';

/** A payout as the service holds it. */
export interface Held {
  reference_id: string;
  amount: number;
  currency: string;
  recipient: string;
  status: string;
  /** How many create requests applied it: more than 1 is a payout made twice. */
  times: number;
  /** When it was applied, on the lag clock (see LedgerOptions.lag). */
  appliedAt?: number;
}

/** How the service treats what it was sent before, and how fast its lookups see its writes. */
export interface LedgerOptions {
  /**
   * Refuses a reference it already holds (a per-payout result `failed`, "Duplicate
   * reference_id: already used", as the sandbox does) instead of applying it again.
   */
  refuseDuplicates?: boolean;
  /** Lookups find a payout only `ms` after it was applied, on `clock` (the run's fake clock). */
  lag?: { ms: number; clock: { now(): number } };
}

/** A payout as a create request carried it. */
export interface Posted {
  reference_id: string;
  amount: number;
  currency: string;
  recipient: string;
}

/** How the service answers one create request. */
export interface Reply {
  /** Which payouts it applies before answering: all (default), none, or these references. */
  apply?: 'all' | 'none' | string[];
  /** The status the ledger holds them under (default success). */
  heldAs?: string;
  /** Applies them only this long after answering (a request still in progress). */
  applyLaterMs?: number;
  status?: number;
  /** The body; by default the success envelope with one result per applied payout. */
  body?: string | Record<string, unknown> | ((results: Array<Record<string, unknown>>) => unknown);
  headers?: Record<string, string>;
  /** Destroys the connection instead of answering. */
  cut?: boolean;
  /** Answers only this long after applying. */
  delayMs?: number;
  /** Answers only once this settles (a request held in flight for as long as a test needs). */
  hold?: Promise<unknown>;
}

/** Decides the reply to the nth create request (from 1). */
export type CreatePolicy = (n: number, posted: Posted[], svc: LedgerService) => Reply;

/**
 * A loopback Payout Service with a ledger: it logs what it applied, so a test can assert that
 * no payout was applied twice whatever the CLI was told. GET answers from the ledger unless
 * `onGet` answers first.
 */
export class LedgerService {
  readonly held = new Map<string, Held>();
  creates = 0;
  gets = 0;
  /** How many create requests carried each reference. */
  readonly posts = new Map<string, number>();
  /** References posted again after a create request had applied them. */
  readonly postedAfterApplied = new Set<string>();
  /** The body of every create request, in the order received, as UTF-8 text. */
  readonly bodies: string[] = [];
  onGet?: (ref: string, res: ServerResponse) => boolean;
  private server?: TestServer;
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly policy: CreatePolicy = () => ({}),
    readonly options: LedgerOptions = {},
  ) {}

  static async start(policy?: CreatePolicy, options?: LedgerOptions): Promise<LedgerService> {
    const svc = new LedgerService(policy, options);
    svc.server = await startServer((req, res) => svc.handle(req, res));
    return svc;
  }

  get url(): string {
    return this.server!.url;
  }

  /** Environment for a run against this service, in a private home. */
  env(home: Record<string, string>): Record<string, string> {
    return {
      ...home,
      PAYOUTS_BASE_URL: this.url,
      PAYOUTS_CLIENT_ID: 'client-1',
      PAYOUTS_CLIENT_SECRET: 'secret-1',
    };
  }

  /**
   * References applied more than once, or posted again after a request applied them (which
   * a service that refuses duplicates does not apply).
   */
  appliedTwice(): string[] {
    const reposted = (ref: string) =>
      !this.options.refuseDuplicates && this.postedAfterApplied.has(ref);
    return [...this.held.values()]
      .filter((h) => h.times > 1 || reposted(h.reference_id))
      .map((h) => h.reference_id);
  }

  /** Puts a payout in the ledger as if made before the test (it counts no application). */
  preload(p: Posted, status = 'success'): void {
    this.held.set(p.reference_id, { ...p, status, times: 0 });
  }

  async close(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    await this.server?.close();
  }

  /** Applies payouts, counting every application. */
  apply(posted: Posted[], status = 'success'): void {
    const appliedAt = this.options.lag?.clock.now();
    for (const p of posted) {
      const prev = this.held.get(p.reference_id);
      if (prev) prev.times += 1;
      else this.held.set(p.reference_id, { ...p, status, times: 1, appliedAt });
    }
  }

  /** What a request refused as duplicates (none unless refuseDuplicates), and what is left. */
  private duplicates(posted: Posted[]): { refused: Posted[]; rest: Posted[] } {
    if (!this.options.refuseDuplicates) return { refused: [], rest: posted };
    const refused = posted.filter((p) => this.held.has(p.reference_id));
    return { refused, rest: posted.filter((p) => !this.held.has(p.reference_id)) };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const ref = refOf(req);
    if (req.method === 'GET' && ref !== undefined) return this.answerGet(ref, res);
    if (req.method !== 'POST') {
      sendJson(res, 404, { success: false, message: ['no route'] });
      return;
    }
    let text = '';
    for await (const chunk of req) text += chunk;
    this.bodies.push(text);
    const posted = (JSON.parse(text) as { payouts: Posted[] }).payouts;
    this.creates += 1;
    for (const p of posted) {
      this.posts.set(p.reference_id, (this.posts.get(p.reference_id) ?? 0) + 1);
      if ((this.held.get(p.reference_id)?.times ?? 0) > 0)
        this.postedAfterApplied.add(p.reference_id);
    }
    const reply = this.policy(this.creates, posted, this);
    const { refused, rest } = this.duplicates(posted);
    const chosen =
      reply.apply === 'none'
        ? []
        : Array.isArray(reply.apply)
          ? rest.filter((p) => (reply.apply as string[]).includes(p.reference_id))
          : rest;
    if (reply.applyLaterMs !== undefined) {
      const t = setTimeout(() => {
        this.timers.delete(t);
        this.apply(chosen, reply.heldAs);
      }, reply.applyLaterMs);
      this.timers.add(t);
    } else this.apply(chosen, reply.heldAs);
    if (reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs));
    if (reply.hold) await reply.hold;
    if (res.destroyed) return;
    if (reply.cut) {
      req.socket.destroy();
      return;
    }
    const results: Array<Record<string, unknown>> = chosen.map((p) => ({
      reference_id: p.reference_id,
      status: 'success',
      transaction_id: `T-${p.reference_id}`,
      amount: p.amount,
      currency: p.currency,
      charges: 0.5,
    }));
    for (const p of refused) {
      const { reference_id, amount, currency } = p;
      const message = 'Duplicate reference_id: already used';
      results.push({
        reference_id,
        status: 'failed',
        transaction_id: null,
        amount,
        currency,
        message,
      });
    }
    const body =
      typeof reply.body === 'function'
        ? reply.body(results)
        : (reply.body ?? {
            success: true,
            message: ['Payouts processed'],
            data: {
              success_count: chosen.length,
              failed_count: refused.length,
              results,
            },
          });
    sendJson(res, reply.status ?? 200, body, reply.headers);
  }

  private answerGet(ref: string, res: ServerResponse): void {
    this.gets += 1;
    if (this.onGet?.(ref, res)) return;
    const h = this.held.get(ref);
    const lag = this.options.lag;
    const seen = !lag || h?.appliedAt === undefined || lag.clock.now() >= h.appliedAt + lag.ms;
    if (!h || !seen) {
      sendJson(res, 404, { success: false, message: ['Payout not found'], data: [] });
      return;
    }
    const { times: _times, appliedAt: _at, ...record } = h;
    sendJson(res, 200, {
      success: true,
      message: ['Payout retrieved'],
      data: { ...record, transaction_id: `T-${ref}`, created_at: '2026-11-24T12:00:00Z' },
    });
  }
}

/**
 * A policy for one-payout requests: the payouts named in `failing` are answered failed (the
 * ledger holds them so, "Account closed"), every other one succeeds.
 */
export function failsThese(failing: ReadonlySet<string>): CreatePolicy {
  return (_n, posted) =>
    failing.has(posted[0]?.reference_id ?? '')
      ? {
          heldAs: 'failed',
          body: (results) => ({
            success: true,
            message: ['Payouts processed'],
            data: {
              success_count: 0,
              failed_count: results.length,
              results: results.map((x) => ({ ...x, status: 'failed', message: 'Account closed' })),
            },
          }),
        }
      : {};
}

/**
 * A policy for one-payout requests: the payouts named in `pending` are answered, and held,
 * pending; every other one as `otherwise` says (default: it succeeds).
 */
export function holdsPending(pending: ReadonlySet<string>, otherwise?: CreatePolicy): CreatePolicy {
  return (n, posted, svc) =>
    pending.has(posted[0]?.reference_id ?? '')
      ? {
          heldAs: 'pending',
          body: (results) => ({
            success: true,
            message: ['Payouts processed'],
            data: {
              success_count: 0,
              failed_count: 0,
              results: results.map((x) => ({ ...x, status: 'pending' })),
            },
          }),
        }
      : (otherwise?.(n, posted, svc) ?? {});
}

/**
 * A policy holding the first create request until `release()` is called: `posted` settles once
 * that request has reached the service, so a test can act while a payout is in flight.
 */
export function holdsFirst(): { policy: CreatePolicy; posted: Promise<void>; release(): void } {
  let release!: () => void;
  const held = new Promise<void>((r) => {
    release = r;
  });
  let arrived!: () => void;
  const posted = new Promise<void>((r) => {
    arrived = r;
  });
  const policy: CreatePolicy = (n) => {
    if (n !== 1) return {};
    arrived();
    return { hold: held };
  };
  return { policy, posted, release };
}

/**
 * For a test file: ledger services and private homes made through it are closed and removed
 * after each test.
 */
export function ledgerPerTest(): {
  start(policy?: CreatePolicy, options?: LedgerOptions): Promise<LedgerService>;
  home(): ReturnType<typeof tempHome>;
} {
  const services: LedgerService[] = [];
  const homes: Array<{ cleanup(): void }> = [];
  afterEach(async () => {
    for (const s of services.splice(0)) await s.close();
    for (const h of homes.splice(0)) h.cleanup();
  });
  return {
    start: async (policy, options) => {
      const svc = await LedgerService.start(policy, options);
      services.push(svc);
      return svc;
    },
    home: () => {
      const home = tempHome();
      homes.push(home);
      return home;
    },
  };
}
