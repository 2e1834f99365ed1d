import { describe, expect, it, vi } from 'vitest';
import type {
  CreateAnswer,
  CreateRequest,
  CreateResponse,
  PayoutRecord,
} from '../../../src/api/types.js';
import { DEFAULT_SEND_RETRY, SendEngine } from '../../../src/core/send/engine.js';
import {
  NetworkError,
  NotFoundError,
  OutcomeUnknownError,
  RateLimitedError,
  RequestRejectedError,
  ServiceError,
  TooLargeError,
} from '../../../src/errors.js';
import type { RunState, StateDb } from '../../../src/state/index.js';
import { FakeClock } from '../../helpers/main.js';
import { openDb, openRun, states, tempStateDir } from '../state/helpers.js';

/** A fake service: `create` decides each answer; applied payouts are readable by GET. */
class FakeService {
  readonly applied = new Map<string, number>();
  readonly creates: string[][] = [];
  readFails = false;
  constructor(
    private readonly create: (
      req: CreateRequest,
      n: number,
      svc: FakeService,
    ) => Promise<CreateResponse | CreateAnswer>,
  ) {}

  /** Records a payout as applied and returns its success result. */
  apply(ref: string) {
    this.applied.set(ref, (this.applied.get(ref) ?? 0) + 1);
    return { reference_id: ref, status: 'success', transaction_id: `T-${ref}`, charges: 0.01 };
  }

  createPayouts = async (req: CreateRequest): Promise<CreateAnswer> => {
    this.creates.push(req.payouts.map((p) => p.reference_id));
    const r = await this.create(req, this.creates.length, this);
    return 'status' in r ? r : { status: 200, response: r };
  };

  getPayout = async (ref: string): Promise<PayoutRecord> => {
    if (this.readFails) throw new NetworkError('down', false);
    if (!this.applied.has(ref)) throw new NotFoundError(ref);
    return { reference_id: ref, status: 'success', transaction_id: `T-${ref}`, amount: 1 };
  };
}

/** Answers with every payout applied. */
function okAll(req: CreateRequest, _n: number, svc: FakeService): Promise<CreateResponse> {
  const results = req.payouts.map((p) => svc.apply(p.reference_id));
  return Promise.resolve({ success_count: results.length, failed_count: 0, results, messages: [] });
}

/** A run of `refs` in a fresh state database, removed after the test. */
async function openState(refs: string[]): Promise<{ db: StateDb; state: RunState }> {
  const db = await openDb(await tempStateDir());
  return { db, state: openRun(db, refs) };
}

/** A payout to queue, with a stand-in hash. */
function pending(ref: string) {
  return {
    payout: { reference_id: ref, amount: '1.00', currency: 'EUR', recipient: 'r' },
    hash: `h-${ref}`,
  };
}

/** An engine over a fake service, with no waits and a fresh outcome store for `rows` rows. */
function newEngine(
  service: FakeService,
  opened: { state: RunState },
  settings: { chunkSize: number; concurrency: number },
  interrupt: AbortSignal = new AbortController().signal,
  warn: (message: string) => void = () => {},
  clock = new FakeClock(),
) {
  return new SendEngine(
    {
      client: service,
      journal: opened.state,
      outcomes: opened.state.outcomes,
      interrupt,
      warn,
      progress: () => {},
      clock,
      random: () => 0,
    },
    {
      ...settings,
      concurrency: { initial: settings.concurrency, max: settings.concurrency },
      retry: DEFAULT_SEND_RETRY,
    },
  );
}

async function run(service: FakeService, refs: string[], chunkSize = 2) {
  const opened = await openState(refs);
  const warnings: string[] = [];
  const engine = newEngine(service, opened, { chunkSize, concurrency: 2 }, undefined, (m) =>
    warnings.push(m),
  );
  for (const ref of refs) {
    engine.enqueue(pending(ref));
    await engine.ready();
  }
  await engine.finish();
  await opened.state.close();
  return {
    engine,
    warnings,
    statuses: [...engine.outcomes.values()].map((o) => `${o.reference_id}:${o.status}`),
  };
}

describe('SendEngine', () => {
  it('sends every payout once in chunks', async () => {
    const svc = new FakeService(okAll);
    const { statuses } = await run(svc, ['A', 'B', 'C', 'D', 'E']);
    expect(svc.creates).toEqual([['A', 'B'], ['C', 'D'], ['E']]);
    expect(statuses).toEqual(['A:success', 'B:success', 'C:success', 'D:success', 'E:success']);
  });

  it('reads back a payout missing from the answer and does not resend it when found', async () => {
    const svc = new FakeService((req, _n, s) => {
      const results = req.payouts.map((p) => s.apply(p.reference_id));
      return Promise.resolve({
        success_count: 1,
        failed_count: 0,
        results: results.slice(0, 1),
        messages: [],
      });
    });
    const { statuses, warnings } = await run(svc, ['A', 'B']);
    expect(svc.creates).toEqual([['A', 'B']]);
    expect(statuses).toEqual(['A:success', 'B:success']);
    expect(warnings.join('\n')).toMatch(/did not report this payout/);
  });

  it('resends only the payouts a 5xx left unapplied, after reading them back', async () => {
    const svc = new FakeService((req, n, s) => {
      if (n === 1) {
        s.apply(req.payouts[0]!.reference_id);
        return Promise.resolve({
          status: 502,
          error: new ServiceError('the service failed (HTTP 502)', { status: 502 }, true),
        });
      }
      return okAll(req, n, s);
    });
    const { statuses } = await run(svc, ['A', 'B']);
    expect(svc.creates).toEqual([['A', 'B'], ['B']]);
    expect([...svc.applied.values()]).toEqual([1, 1]);
    expect(statuses).toEqual(['A:success', 'B:success']);
  });

  it('stops with outcome unknown when the read-back fails too, and never resends', async () => {
    const svc = new FakeService(() => Promise.reject(new NetworkError('reset after write', true)));
    svc.readFails = true;
    const { engine, statuses } = await run(svc, ['A', 'B', 'C', 'D'], 2);
    expect(engine.fatal).toBeInstanceOf(OutcomeUnknownError);
    const sent = svc.creates.flat();
    expect(new Set(sent).size).toBe(sent.length);
    expect([...engine.unknown].sort()).toEqual([...sent].sort());
    expect(statuses.some((s) => s.endsWith(':unknown'))).toBe(true);
  });

  it('splits a request refused as too large and lowers the chunk size', async () => {
    const svc = new FakeService((req, n, s) =>
      req.payouts.length > 2
        ? Promise.resolve({ status: 413, error: new TooLargeError('too large', { status: 413 }) })
        : okAll(req, n, s),
    );
    const { statuses, warnings } = await run(svc, ['A', 'B', 'C', 'D', 'E', 'F'], 4);
    expect(svc.creates[0]).toEqual(['A', 'B', 'C', 'D']);
    expect(svc.creates.slice(1).every((c) => c.length <= 2)).toBe(true);
    expect([...svc.applied.values()].every((n) => n === 1)).toBe(true);
    expect(statuses.filter((s) => s.endsWith(':success'))).toHaveLength(6);
    expect(warnings.join('\n')).toMatch(/at most 2 per request/);
  });

  it('reads back a request refused whole; what the service does not have is reported not sent', async () => {
    const svc = new FakeService(() =>
      Promise.resolve({
        status: 422,
        error: new RequestRejectedError('the service rejected the request (HTTP 422: too long)', {
          status: 422,
          serviceMessages: ['batch_reference too long'],
        }),
      }),
    );
    const { engine } = await run(svc, ['A']);
    expect(svc.creates).toHaveLength(1);
    expect([...engine.outcomes.values()].find((o) => o.reference_id === 'A')).toMatchObject({
      status: 'not_sent',
      message: 'not sent: the service rejected the request (HTTP 422: too long)',
    });
  });

  it('retries a refused connection, which was never applied', async () => {
    const svc = new FakeService((req, n, s) =>
      n === 1
        ? Promise.reject(new NetworkError('connection refused', false, 'ECONNREFUSED'))
        : okAll(req, n, s),
    );
    const { statuses } = await run(svc, ['A']);
    expect(svc.creates).toEqual([['A'], ['A']]);
    expect(statuses).toEqual(['A:success']);
  });

  it('writes the intent of at most two waiting chunks ahead: a crash leaves at most two more', async () => {
    const opened = await openState(['A', 'B', 'C', 'D']);
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const svc = new FakeService(async (req, n, s) => {
      if (n === 1) await gate;
      return okAll(req, n, s);
    });
    const engine = newEngine(svc, opened, { chunkSize: 1, concurrency: 1 });
    for (const ref of ['A', 'B', 'C', 'D']) engine.enqueue(pending(ref));
    // Until A is sent and C's intent is written, however busy the machine; then as long again
    // as before, for D's intent to show if it were (wrongly) written too.
    await vi.waitFor(
      async () => {
        await opened.state.flush();
        expect(svc.creates.length > 0 && states(opened.db, opened.state).C).toBe('in_flight');
      },
      { timeout: 20_000, interval: 5 },
    );
    await new Promise((r) => setTimeout(r, 20));
    await opened.state.flush();
    // A is sent; B and C wait with their intent written; D waits without one.
    expect(svc.creates).toEqual([['A']]);
    expect(states(opened.db, opened.state)).toEqual({
      A: 'in_flight',
      B: 'in_flight',
      C: 'in_flight',
      D: 'queued',
    });
    expect(engine.ready()).toBeDefined();
    release();
    await engine.finish();
    await opened.state.close();
    expect(states(opened.db, opened.state)).toEqual({ A: 'done', B: 'done', C: 'done', D: 'done' });
    expect(svc.creates).toEqual([['A'], ['B'], ['C'], ['D']]);
  });

  it('frees a waiting chunk whose intent was written when the run stops before sending it', async () => {
    const opened = await openState(['A', 'B']);
    const stop = new AbortController();
    const svc = new FakeService((req, n, s) => {
      stop.abort();
      return okAll(req, n, s);
    });
    const engine = newEngine(svc, opened, { chunkSize: 1, concurrency: 1 }, stop.signal);
    for (const ref of ['A', 'B']) engine.enqueue(pending(ref));
    await engine.finish();
    await opened.state.close();
    expect(svc.creates).toEqual([['A']]);
    // B was never sent: free to send on the next run, not in flight to read back.
    expect(states(opened.db, opened.state)).toEqual({ A: 'done', B: 'free' });
    expect([...engine.outcomes.values()].map((o) => o.status)).toEqual(['success', 'not_sent']);
  });

  it('ends now on a second stop: the request in flight in doubt, waiting ones freed, a late answer ignored', async () => {
    const opened = await openState(['A', 'B', 'C', 'D']);
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const svc = new FakeService(async (req, n, s) => {
      const answer = okAll(req, n, s);
      await gate;
      return answer;
    });
    const stop = new AbortController();
    const now = new AbortController();
    const engine = new SendEngine(
      {
        client: svc,
        journal: opened.state,
        outcomes: opened.state.outcomes,
        interrupt: stop.signal,
        finishNow: now.signal,
        warn: () => {},
        progress: () => {},
        clock: new FakeClock(),
      },
      {
        chunkSize: 1,
        concurrency: { initial: 1, max: 1 },
        retry: DEFAULT_SEND_RETRY,
      },
    );
    for (const ref of ['A', 'B', 'C', 'D']) engine.enqueue(pending(ref));
    // Stops once A is in flight and B's and C's intents are written, however busy the machine.
    await vi.waitFor(
      async () => {
        await opened.state.flush();
        const now = states(opened.db, opened.state);
        expect(svc.creates.length > 0 && now.B === 'in_flight' && now.C).toBe('in_flight');
      },
      { timeout: 20_000, interval: 5 },
    );
    await new Promise((r) => setTimeout(r, 20));
    stop.abort();
    now.abort();
    // Returns while A's request is still unanswered.
    await engine.finish();
    expect(svc.creates).toEqual([['A']]);
    expect(engine.unknown).toEqual(['A']);
    const statuses = () => [...engine.outcomes.values()].map((o) => o.status);
    expect(statuses()).toEqual(['unknown', 'not_sent', 'not_sent', 'not_sent']);
    await opened.state.close();
    // A is in doubt for the next run to read back; B and C, written ahead, are free.
    expect(states(opened.db, opened.state)).toEqual({
      A: 'unknown',
      B: 'free',
      C: 'free',
      D: 'queued',
    });
    release();
    await new Promise((r) => setTimeout(r, 20));
    expect(statuses()[0]).toBe('unknown');
    expect(engine.fatal).toBeUndefined();
  });

  it('writes a fresh intent for a chunk that waited long after its intent was written', async () => {
    const opened = await openState(['A', 'B']);
    const clock = new FakeClock();
    const svc = new FakeService(async (req, n, s) => {
      // The first request takes longer than a prepared intent may wait (1/50 of 50 s).
      if (n === 1) clock.t += 5_000;
      return okAll(req, n, s);
    });
    const engine = newEngine(
      svc,
      opened,
      { chunkSize: 1, concurrency: 1 },
      undefined,
      undefined,
      clock,
    );
    for (const ref of ['A', 'B']) engine.enqueue(pending(ref));
    await engine.finish();
    const reqs = opened.db
      .prepare('SELECT reference_id, req FROM journal WHERE run = ? ORDER BY row')
      .all(opened.state.id) as Array<{ reference_id: string; req: number }>;
    await opened.state.close();
    expect(svc.creates).toEqual([['A'], ['B']]);
    // B's prepared intent (request 2) was withdrawn; it went out as request 3.
    expect(reqs.map((r) => `${r.reference_id}:${r.req}`)).toEqual(['A:1', 'B:3']);
    expect(states(opened.db, opened.state)).toEqual({ A: 'done', B: 'done' });
  });
  it("a 429's Retry-After holds the refused request, not the others, while the service takes requests", async () => {
    const opened = await openState(['A', 'B', 'C']);
    const clock = new FakeClock();
    const start = clock.t;
    const sentAt: string[] = [];
    const svc = new FakeService((req, n, s) => {
      sentAt.push(`${req.payouts[0]!.reference_id}@${clock.t - start}`);
      if (n === 2) {
        return Promise.resolve({
          status: 429,
          error: new RateLimitedError('rate limited by the service (HTTP 429)', {
            status: 429,
            retryAfterMs: 1_000,
          }),
          retryAfterMs: 1_000,
        });
      }
      return okAll(req, n, s);
    });
    const engine = newEngine(
      svc,
      opened,
      { chunkSize: 1, concurrency: 2 },
      undefined,
      undefined,
      clock,
    );
    for (const ref of ['A', 'B', 'C']) engine.enqueue(pending(ref));
    await engine.finish();
    await opened.state.close();
    // C went at once; B again only after its Retry-After.
    expect(sentAt).toEqual(['A@0', 'B@0', 'C@0', 'B@1000']);
    expect(engine.pace.record.throttled).toBe(1);
  });
});
