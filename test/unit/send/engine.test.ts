import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { CreateRequest, CreateResponse, PayoutRecord } from '../../../src/api/types.js';
import { DEFAULT_SEND_RETRY, SendEngine } from '../../../src/core/send/engine.js';
import { OutcomeStore } from '../../../src/core/send/outcome-store.js';
import {
  NetworkError,
  NotFoundError,
  OutcomeUnknownError,
  RequestRejectedError,
  ServiceError,
  TooLargeError,
} from '../../../src/errors.js';
import { RunJournal } from '../../../src/journal/index.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

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
    ) => Promise<CreateResponse>,
  ) {}

  /** Records a payout as applied and returns its success result. */
  apply(ref: string) {
    this.applied.set(ref, (this.applied.get(ref) ?? 0) + 1);
    return { reference_id: ref, status: 'success', transaction_id: `T-${ref}`, charges: 0.01 };
  }

  createPayouts = async (req: CreateRequest): Promise<CreateResponse> => {
    this.creates.push(req.payouts.map((p) => p.reference_id));
    return this.create(req, this.creates.length, this);
  };

  getPayout = async (ref: string): Promise<PayoutRecord> => {
    if (this.readFails) throw new NetworkError('down', false);
    if (!this.applied.has(ref)) throw new NotFoundError(ref);
    return { reference_id: ref, status: 'success', transaction_id: `T-${ref}` };
  };
}

/** Answers with every payout applied. */
function okAll(req: CreateRequest, _n: number, svc: FakeService): Promise<CreateResponse> {
  const results = req.payouts.map((p) => svc.apply(p.reference_id));
  return Promise.resolve({ success_count: results.length, failed_count: 0, results, messages: [] });
}

/** A run journal in a fresh state folder, removed after the tests. */
async function openJournal(payoutCount: number) {
  const stateDir = mkdtempSync(join(tmpdir(), 'payouts-engine-'));
  dirs.push(stateDir);
  const journal = await RunJournal.open({
    stateDir,
    serviceKey: 'fake',
    runId: 'run1',
    header: {
      service: 'fake',
      client_id: 'c',
      inputs: ['x.csv'],
      input_hash: 'h',
      payout_count: payoutCount,
    },
  });
  return { stateDir, journal };
}

/** A journal line as the tests read it back. */
interface LineRecord {
  t: string;
  req?: number;
  p?: string[][];
  refs?: string[];
}

/** Every record of a journal file, in order. */
function journalRecords(path: string): LineRecord[] {
  return readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as LineRecord);
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
  opened: { stateDir: string; journal: RunJournal },
  rows: number,
  settings: { chunkSize: number; concurrency: number },
  interrupt: AbortSignal = new AbortController().signal,
  warn: (message: string) => void = () => {},
) {
  return new SendEngine(
    {
      client: service,
      journal: opened.journal,
      outcomes: OutcomeStore.create(join(opened.stateDir, 'tmp'), 1, rows, () => undefined),
      interrupt,
      warn,
      progress: () => {},
      sleep: async () => {},
      random: () => 0,
    },
    { ...settings, retry: DEFAULT_SEND_RETRY },
  );
}

async function run(service: FakeService, refs: string[], chunkSize = 2) {
  const opened = await openJournal(refs.length);
  const warnings: string[] = [];
  const engine = newEngine(
    service,
    opened,
    refs.length,
    { chunkSize, concurrency: 2 },
    undefined,
    (m) => warnings.push(m),
  );
  for (const ref of refs) {
    engine.enqueue(pending(ref));
    await engine.ready();
  }
  await engine.finish();
  await opened.journal.close();
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
    expect(warnings.join('\n')).toMatch(/did not include 1 of the payouts/);
  });

  it('resends only the payouts a 5xx left unapplied, after reading them back', async () => {
    const svc = new FakeService((req, n, s) => {
      if (n === 1) {
        s.apply(req.payouts[0]!.reference_id);
        return Promise.reject(
          new ServiceError('the service failed (HTTP 502)', { status: 502 }, true),
        );
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
        ? Promise.reject(new TooLargeError('too large', { status: 413 }))
        : okAll(req, n, s),
    );
    const { statuses, warnings } = await run(svc, ['A', 'B', 'C', 'D', 'E', 'F'], 4);
    expect(svc.creates[0]).toEqual(['A', 'B', 'C', 'D']);
    expect(svc.creates.slice(1).every((c) => c.length <= 2)).toBe(true);
    expect([...svc.applied.values()].every((n) => n === 1)).toBe(true);
    expect(statuses.filter((s) => s.endsWith(':success'))).toHaveLength(6);
    expect(warnings.join('\n')).toMatch(/at most 2 per request/);
  });

  it('reports a request rejected whole as failed with the service message, without retrying', async () => {
    const svc = new FakeService(() =>
      Promise.reject(
        new RequestRejectedError('rejected', {
          status: 422,
          serviceMessages: ['batch_reference too long'],
        }),
      ),
    );
    const { engine } = await run(svc, ['A']);
    expect(svc.creates).toHaveLength(1);
    expect([...engine.outcomes.values()].find((o) => o.reference_id === 'A')).toMatchObject({
      status: 'failed',
      message: 'request rejected: batch_reference too long',
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

  it('writes the intents of the chunks waiting for a slot ahead, durable before their requests, and frees them when the run stops first', async () => {
    const opened = await openJournal(6);
    const { journal } = opened;
    const interrupt = new AbortController();
    const onDisk = () => journalRecords(journal.path);
    const intentsSeen: string[][] = [];
    let release!: () => void;
    const svc = new FakeService(async (req, n, s) => {
      // Every payout of this request has a durable intent by now.
      const durable = new Set(
        onDisk()
          .filter((r) => r.t === 'intent')
          .flatMap((r) => r.p!.map(([ref]) => ref!)),
      );
      intentsSeen.push(req.payouts.map((p) => p.reference_id).filter((r) => durable.has(r)));
      if (n === 1) {
        // The second chunk waits for the only slot: its intent is written meanwhile.
        await new Promise<void>((r) => {
          release = r;
        });
      }
      return okAll(req, n, s);
    });
    const engine = newEngine(svc, opened, 6, { chunkSize: 2, concurrency: 1 }, interrupt.signal);
    const feed = (async () => {
      for (const ref of ['A', 'B', 'C', 'D', 'E', 'F', 'G', 'H']) {
        if (engine.stopping) break;
        engine.enqueue(pending(ref));
        await engine.ready();
      }
    })();
    while (!release) await new Promise((r) => setTimeout(r, 5));
    // Wait until the intents of both waiting chunks are on disk, then stop the run.
    const intentOf = (ref: string) =>
      onDisk().find((r) => r.t === 'intent' && r.p!.some(([p]) => p === ref));
    for (let i = 0; i < 200; i++) {
      if (intentOf('C') && intentOf('E')) break;
      await new Promise((r) => setTimeout(r, 5));
    }
    interrupt.abort();
    release();
    await feed;
    await engine.finish();
    await journal.close();
    expect(svc.creates).toEqual([['A', 'B']]);
    expect(intentsSeen).toEqual([['A', 'B']]);
    const records = onDisk();
    for (const [first, chunk] of [
      ['C', ['C', 'D']],
      ['E', ['E', 'F']],
    ] as const) {
      const early = intentOf(first)!;
      expect(early.p!.map(([ref]) => ref)).toEqual(chunk);
      expect(records).toContainEqual(
        expect.objectContaining({ t: 'not_applied', req: early.req, refs: chunk }),
      );
    }
    // Two chunks waiting held the reader back: G and H were never queued.
    expect(records.some((r) => r.t === 'intent' && r.p!.some(([ref]) => ref === 'G'))).toBe(false);
    const statuses = [...engine.outcomes.values()].map((o) => `${o.reference_id}:${o.status}`);
    expect(statuses).toEqual([
      'A:success',
      'B:success',
      'C:not_sent',
      'D:not_sent',
      'E:not_sent',
      'F:not_sent',
    ]);
  });

  it('runs the reader ahead by rounds: it stops at two rounds of waiting chunks, refills a round at a time with one fsync, and frees them all on a stop', async () => {
    const refs = Array.from({ length: 40 }, (_, i) => `R${String(i).padStart(2, '0')}`);
    const opened = await openJournal(refs.length);
    const { journal } = opened;
    const interrupt = new AbortController();
    const gates: Array<() => void> = [];
    const svc = new FakeService(async (req, n, s) => {
      if (!interrupt.signal.aborted) await new Promise<void>((r) => gates.push(r));
      return okAll(req, n, s);
    });
    const engine = newEngine(
      svc,
      opened,
      refs.length,
      { chunkSize: 1, concurrency: 4 },
      interrupt.signal,
    );
    let queued = 0;
    let blocked = false;
    const feed = (async () => {
      for (const ref of refs) {
        if (engine.stopping) break;
        engine.enqueue(pending(ref));
        queued += 1;
        // As the spool's reader does: no await while the engine does not push back.
        const wait = engine.ready();
        if (wait) {
          blocked = true;
          await wait;
          blocked = false;
        }
      }
    })();
    const until = async (what: string, cond: () => boolean) => {
      for (let i = 0; i < 400 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
      if (!cond()) throw new Error(`timed out waiting for ${what}`);
      // Let anything that would still move, move.
      await new Promise((r) => setTimeout(r, 20));
    };
    // Four requests in flight, two rounds (eight chunks) waiting, and the reader held back.
    await until('4 in flight', () => gates.length === 4 && blocked);
    expect(queued).toBe(12);
    // Three requests finish: three waiting chunks start, but five still wait.
    for (let k = 0; k < 3; k++) gates.shift()!();
    await until('7 requests', () => svc.creates.length === 7);
    expect(queued).toBe(12);
    expect(blocked).toBe(true);
    // The fourth leaves one round waiting: the reader queues a whole round, whose four
    // intents share one fsync.
    await journal.flush();
    const syncsBefore = journal.syncCount;
    gates.shift()!();
    await until('the refill', () => queued === 16 && blocked);
    await journal.flush();
    expect(journal.syncCount - syncsBefore).toBe(1);
    // A stop now: the eight waiting chunks, intents written, are freed for the next run.
    interrupt.abort();
    while (gates.length) gates.shift()!();
    await feed;
    await engine.finish();
    await journal.close();
    const records = journalRecords(journal.path);
    const intended = records.filter((r) => r.t === 'intent').flatMap((r) => r.p!.map(([x]) => x));
    const freed = records.filter((r) => r.t === 'not_applied').flatMap((r) => r.refs!);
    const sent = svc.creates.flat();
    expect(sent).toEqual(refs.slice(0, 8));
    expect(intended).toEqual(refs.slice(0, 16));
    expect(freed).toEqual(refs.slice(8, 16));
    expect([...svc.applied.values()].every((n) => n === 1)).toBe(true);
    const statuses = [...engine.outcomes.values()].map((o) => o.status);
    expect(statuses).toEqual([...Array(8).fill('success'), ...Array(8).fill('not_sent')]);
  });
});
