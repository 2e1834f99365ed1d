import { describe, expect, it } from 'vitest';
import type {
  CreateAnswer,
  CreateRequest,
  CreateResponse,
  PayoutRecord,
} from '../../../src/api/types.js';
import { FakeClock } from '../../helpers/main.js';
import { DEFAULT_SEND_RETRY, SendEngine } from '../../../src/core/send/engine.js';
import {
  NetworkError,
  NotFoundError,
  OutcomeUnknownError,
  RequestRejectedError,
  ServiceError,
  TooLargeError,
} from '../../../src/errors.js';
import type { RunState, StateDb } from '../../../src/state/index.js';
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
) {
  return new SendEngine(
    {
      client: service,
      journal: opened.state,
      outcomes: opened.state.outcomes,
      interrupt,
      warn,
      progress: () => {},
      clock: new FakeClock(),
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

  it('writes no intent for a chunk waiting for a slot: a crash leaves only requests in flight', async () => {
    const opened = await openState(['A', 'B', 'C']);
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const svc = new FakeService(async (req, n, s) => {
      if (n === 1) await gate;
      return okAll(req, n, s);
    });
    const engine = newEngine(svc, opened, { chunkSize: 1, concurrency: 1 });
    for (const ref of ['A', 'B', 'C']) engine.enqueue(pending(ref));
    await new Promise((r) => setTimeout(r, 20));
    await opened.state.flush();
    expect(states(opened.db, opened.state)).toEqual({ A: 'in_flight', B: 'queued', C: 'queued' });
    expect(engine.ready()).toBeDefined();
    release();
    await engine.finish();
    await opened.state.close();
    expect(states(opened.db, opened.state)).toEqual({ A: 'done', B: 'done', C: 'done' });
    expect(svc.creates).toEqual([['A'], ['B'], ['C']]);
  });
});
