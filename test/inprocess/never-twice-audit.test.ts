import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import type { Clock } from '../../src/clock.js';
import { sendJson } from '../helpers/http-servers.js';
import {
  type CreatePolicy,
  type LedgerService,
  ledgerPerTest,
  type Reply,
} from '../helpers/ledger-service.js';
import { clockStoppedAtLongWait, FakeClock, type MainResult, runMain } from '../helpers/main.js';
import { STORES, storeEnv } from '../helpers/pg.js';

// One test per finding of the never-pay-twice audit (issue 16): each runs against a loopback
// service that answers that way and logs what it applied, then runs the same command again.

let svc: LedgerService | undefined;
const fixture = ledgerPerTest();
/** Puts a run's history in the store of the enclosing describe (see the end of the file). */
let withStore: <E extends Record<string, string>>(env: E) => E = (env) => env;

interface Doc {
  success_count: number;
  results: Array<{
    reference_id: string;
    status: string;
    service_status: string | null;
    message?: string;
  }>;
}

interface Runs {
  first: MainResult;
  second: MainResult;
  svc: LedgerService;
  refs: string[];
  /** The references of --failed-out after each run. */
  failedOut: string[][];
  /** Runs the same command a third time. */
  again(): Promise<MainResult>;
}

/** The references of a --failed-out file (empty when none was written). */
function failedRefs(path: string): string[] {
  if (!existsSync(path)) return [];
  const lines = readFileSync(path, 'utf8').trim().split('\n').slice(1);
  return lines.filter(Boolean).map((l) => l.split(',')[0]!);
}

/** The status of each reference in a --json document. */
function statuses(r: MainResult): Record<string, string> {
  const doc = JSON.parse(r.stdout) as Doc;
  return Object.fromEntries(doc.results.map((x) => [x.reference_id, x.status]));
}

/**
 * Sends `n` payouts (chunks of `chunk`, one request at a time) twice with the same state,
 * against a service that answers by `policy`; asserts nothing was applied or posted twice,
 * and that --failed-out lists only payouts the service does not have or stated as failed.
 */
async function twoRuns(
  policy: CreatePolicy,
  opts: {
    n?: number;
    chunk?: number;
    env?: Record<string, string>;
    clock?: Clock | null;
    setup?: (svc: LedgerService) => void;
  } = {},
): Promise<Runs> {
  svc = await fixture.start(policy);
  opts.setup?.(svc);
  const home = fixture.home();
  const refs = Array.from({ length: opts.n ?? 4 }, (_, i) => `AUD-${i + 1}`);
  const file = join(home.dir, 'run.csv');
  const rows = refs.map((r, i) => `${r},${i + 1}0.50,EUR,${r.toLowerCase()}@example.com`);
  writeFileSync(file, `reference_id,amount,currency,recipient\n${rows.join('\n')}\n`);
  const clock = opts.clock === null ? undefined : (opts.clock ?? new FakeClock());
  const env = withStore({ ...svc.env(home.env), ...opts.env });
  const run = (k: number) =>
    runMain(
      [
        'send',
        file,
        '--yes',
        '--json',
        '--concurrency',
        '1',
        '--chunk-size',
        String(opts.chunk ?? refs.length),
        '--failed-out',
        join(home.dir, `failed-${k}.csv`),
      ],
      { env, clock },
    );
  const amountOf = (ref: string) => (refs.indexOf(ref) + 1) * 10 + 0.5;
  const failedOut: string[][] = [];
  // --failed-out lists, at the time of its run, only what the service does not have as ours
  // or stated as failed or canceled.
  const checked = async (k: number) => {
    const r = await run(k);
    const list = failedRefs(join(home.dir, `failed-${k}.csv`));
    for (const ref of list) {
      const held = svc!.held.get(ref);
      const notOurs = held === undefined || held.amount !== amountOf(ref);
      expect(notOurs || ['failed', 'canceled'].includes(held.status), ref).toBe(true);
    }
    failedOut.push(list);
    return r;
  };
  const first = await checked(1);
  const second = await checked(2);
  expect(svc.appliedTwice()).toEqual([]);
  return { first, second, svc, refs, failedOut, again: () => run(3) };
}

/** A success envelope whose results list is `edit` of the results of what was applied. */
function resultsBody(edit: (results: Array<Record<string, unknown>>) => unknown[]): Reply['body'] {
  return (results) => ({ success: true, message: [], data: { results: edit(results) } });
}

/** The first request answers `reply`; later ones apply everything and succeed. */
function firstAnswers(reply: Reply): CreatePolicy {
  return (n) => (n === 1 ? reply : {});
}

describe.each(STORES)('the audit (%s)', (store) => {
  const inStore = storeEnv(store, { migrated: true });
  beforeEach(() => {
    withStore = inStore;
  });
  /**
   * Sections about what an answer proves, whose runs write the same records whatever the
   * store: on SQLite only, so the suite stays quick (the store contract covers the records).
   */
  const verdictOnly = (name: string, fn: () => void) => {
    if (store === 'sqlite') describe(name, fn);
  };
  /** Error statuses of section 1: every one on SQLite, the first and last on PostgreSQL. */
  const errorStatuses = store === 'sqlite' ? [200, 400, 409, 422] : [200, 422];

  describe('0. "Payout not found" is proof only as the spec\'s envelope under a status below 500', () => {
    /** Lookups answered by something other than the service: a proxy, a framework's error page. */
    const pages: Array<[string, number, string, string]> = [
      ['plain text under HTTP 500', 500, 'text/plain', 'Payout not found'],
      [
        'the envelope under HTTP 500',
        500,
        'application/json',
        '{"success":false,"message":["Payout not found"],"data":[]}',
      ],
      ['plain text under HTTP 404', 404, 'text/plain', 'Payout not found'],
      [
        'an envelope whose data is not empty',
        404,
        'application/json',
        '{"success":false,"message":["Payout not found"],"data":{"reference_id":"X"}}',
      ],
    ];
    const answering = (status: number, type: string, body: string) => (s: LedgerService) => {
      s.onGet = (_ref, res) => {
        res.writeHead(status, { 'content-type': type });
        res.end(body);
        return true;
      };
    };
    for (const [name, status, type, body] of pages) {
      it(`after a cut request, ${name} keeps the payouts in doubt: nothing sent again`, async () => {
        const r = await twoRuns(firstAnswers({ cut: true }), {
          n: 10,
          setup: answering(status, type, body),
        });
        expect(r.first.code).toBe(7);
        expect(r.second.code).toBe(7);
        expect(Object.values(statuses(r.first))).toEqual(Array(10).fill('unknown'));
        expect(r.svc.creates).toBe(1);
        expect(r.failedOut).toEqual([[], []]);
        // Once the lookups answer from the ledger, a third run finds them: still sent once.
        r.svc.onGet = undefined;
        const third = await r.again();
        expect(third.code).toBe(0);
        expect(r.svc.creates).toBe(1);
        expect(r.svc.appliedTwice()).toEqual([]);
      });
    }

    it('--check-service from a second folder sends nothing when lookups answer a 500 "Payout not found"', async () => {
      svc = await fixture.start();
      const [a, b] = [fixture.home(), fixture.home()];
      const file = join(a.dir, 'run.csv');
      const refs = Array.from({ length: 6 }, (_, i) => `CHK-${i + 1}`);
      const rows = refs.map((r, i) => `${r},${i + 1}.25,EUR,${r.toLowerCase()}@example.com`);
      writeFileSync(file, `reference_id,amount,currency,recipient\n${rows.join('\n')}\n`);
      const clock = new FakeClock();
      const first = await runMain(['send', file, '--yes'], {
        env: withStore(svc.env(a.env)),
        clock,
      });
      expect(first.code).toBe(0);
      answering(500, 'text/plain', 'Payout not found')(svc);
      // Another folder with a history of its own: only the lookups stand between it and paying again.
      const second = await runMain(['send', file, '--yes', '--json', '--check-service'], {
        env: svc.env(b.env),
        clock,
      });
      expect(second.code).toBe(7);
      expect(svc.creates).toBe(1);
      expect(svc.appliedTwice()).toEqual([]);
      expect(refs.every((r) => svc!.posts.get(r) === 1)).toBe(true);
    });
  });

  describe('1. error answers after the payouts were applied', () => {
    for (const status of errorStatuses) {
      it(`success false under HTTP ${status} with results: the results win`, async () => {
        const r = await twoRuns(
          firstAnswers({
            status,
            body: (results) => ({
              success: false,
              message: ['Partially failed'],
              data: { results },
            }),
          }),
        );
        expect(r.first.code).toBe(0);
        expect(Object.values(statuses(r.first))).toEqual([
          'success',
          'success',
          'success',
          'success',
        ]);
        expect(r.failedOut[0]).toEqual([]);
        expect(r.svc.creates).toBe(1);
      });

      it(`success false under HTTP ${status} without results: read back, found, not resent`, async () => {
        const r = await twoRuns(
          firstAnswers({ status, body: { success: false, message: ['Rejected'], data: [] } }),
        );
        expect(r.first.stderr).toMatch(/reading 4 payouts back/);
        expect(r.first.code).toBe(0);
        expect(r.svc.creates).toBe(1);
        expect(r.second.code).toBe(0);
      });
    }

    for (const status of [302, 303]) {
      it(`a ${status} to the create request after applying: read back, the run stops, not resent`, async () => {
        const r = await twoRuns(
          firstAnswers({
            status,
            headers: { location: 'https://elsewhere.invalid/api' },
            body: '',
          }),
          { n: 4, chunk: 2 },
        );
        expect(r.first.stderr).toMatch(/redirect/);
        expect(statuses(r.first)['AUD-1']).toBe('success');
        expect(r.first.code).toBe(7);
        expect(r.second.code).toBe(0);
        expect([...r.svc.held.keys()].sort()).toEqual(r.refs);
      });
    }

    it('a refusal the service did not apply: reported not sent with its message, sent by the next run', async () => {
      const r = await twoRuns(
        firstAnswers({
          apply: 'none',
          status: 400,
          body: { success: false, message: ['Invalid batch'], data: [] },
        }),
      );
      expect(r.first.code).toBe(4);
      const doc = JSON.parse(r.first.stdout) as Doc;
      expect(doc.results.every((x) => x.status === 'not_sent')).toBe(true);
      expect(doc.results[0]!.message).toMatch(/Invalid batch/);
      expect(r.failedOut[0]).toEqual(r.refs);
      expect(r.second.code).toBe(0);
      expect(r.svc.held.size).toBe(4);
    });
  });

  verdictOnly('2. message text is not a fact', () => {
    it('a 500 "Too many requests to the ledger" after applying: no split, read back', async () => {
      const r = await twoRuns(
        firstAnswers({
          status: 500,
          body: { success: false, message: ['Too many requests to the ledger'], data: [] },
        }),
      );
      expect(r.first.stderr).not.toMatch(/sending at most/);
      expect(r.svc.creates).toBe(1);
      expect(r.first.code).toBe(0);
    });

    it('a 400 "Daily limit for payouts exceeded" after part was applied: paid ones are success', async () => {
      const r = await twoRuns(
        firstAnswers({
          apply: ['AUD-1', 'AUD-2'],
          status: 400,
          body: { success: false, message: ['Daily limit for payouts exceeded'], data: [] },
        }),
      );
      expect(statuses(r.first)).toEqual({
        'AUD-1': 'success',
        'AUD-2': 'success',
        'AUD-3': 'not_sent',
        'AUD-4': 'not_sent',
      });
      expect(r.failedOut[0]).toEqual(['AUD-3', 'AUD-4']);
      expect(statuses(r.second)).toMatchObject({ 'AUD-3': 'success', 'AUD-4': 'success' });
    });

    it('only HTTP 413 splits a request', async () => {
      const r = await twoRuns((n) =>
        n === 1
          ? { apply: 'none', status: 413, body: { success: false, message: ['x'], data: [] } }
          : {},
      );
      expect(r.first.stderr).toMatch(/sending at most 2 per request/);
      expect(r.svc.creates).toBe(3);
    });
  });

  describe('3. the read-back waits until the request can no longer be in progress', () => {
    it('a service still working after the response timeout: nothing applied twice', async () => {
      // Times out at 0.5 s (the deadline ends it by 0.75 s); the service applies at 0.8 s,
      // within the quiet time (0.83 s), and answers at 1.25 s. Whether the first read-back comes
      // before or after 0.8 s depends on timers; either way nothing may be sent again. The wait
      // itself is tested with a fake clock in test/unit/send/readback.test.ts.
      const r = await twoRuns((n) => (n === 1 ? { applyLaterMs: 800, delayMs: 1250 } : {}), {
        env: { PAYOUTS_TIMEOUT: '0.5' },
        clock: null,
      });
      expect(r.svc.creates).toBe(1);
      expect(r.first.code).toBe(0);
      expect(r.second.code).toBe(0);
    });

    it('a run started again while the earlier request is still in progress waits before trusting "not found"', async () => {
      // The first run cannot read back (every GET refused) and stops with the outcome unknown;
      // the service applies the request 0.3 s after it came, within the quiet time (0.83 s).
      // The second run starts at once.
      let refuseReads = true;
      const r = await twoRuns((n) => (n === 1 ? { applyLaterMs: 300, cut: true } : {}), {
        env: { PAYOUTS_TIMEOUT: '0.5' },
        clock: null,
        setup: (s) => {
          s.onGet = (_ref, res) => {
            if (!refuseReads) return false;
            refuseReads = false;
            sendJson(res, 400, { success: false, message: ['Bad request'], data: [] });
            return true;
          };
        },
      });
      expect(r.first.code).toBe(7);
      expect(r.second.code).toBe(0);
      expect(r.svc.creates).toBe(1);
    });
  });

  describe('3b. stopping the wait', () => {
    it('Ctrl-C while waiting for the quiet time leaves the payouts unknown (exit 130); the next run settles them once', async () => {
      svc = await fixture.start((n) => (n === 1 ? { apply: 'none', cut: true } : {}));
      const home = fixture.home();
      const file = join(home.dir, 'run.csv');
      writeFileSync(file, 'reference_id,amount,currency,recipient\nW-1,10.50,EUR,w@example.com\n');
      // The user presses Ctrl-C as the long wait begins.
      const { clock, stop } = clockStoppedAtLongWait();
      const args = ['send', file, '--yes', '--json'];
      const first = await runMain(args, {
        env: withStore(svc.env(home.env)),
        clock,
        interrupt: stop.signal,
      });
      expect(first.code).toBe(130);
      expect(statuses(first)).toEqual({ 'W-1': 'unknown' });
      expect(first.stderr).toContain('1 in doubt');
      expect(first.stderr).not.toContain('Run the same command again to send them');
      // Its waits stop only `stop`, which the second run does not listen to.
      const second = await runMain(args, { env: withStore(svc.env(home.env)), clock });
      expect(second.code).toBe(0);
      expect(svc.appliedTwice()).toEqual([]);
      expect(svc.held.get('W-1')?.times).toBe(1);
    });
  });

  describe('4. a read-back must match', () => {
    it('a GET answering another reference: proves nothing, never success', async () => {
      const r = await twoRuns(firstAnswers({ apply: 'none', cut: true }), {
        n: 1,
        setup: (s) => {
          s.onGet = (_ref, res) => {
            sendJson(res, 200, {
              success: true,
              message: [],
              data: {
                reference_id: 'SOMEONE-ELSE',
                status: 'success',
                amount: 10.5,
                currency: 'EUR',
              },
            });
            return true;
          };
        },
      });
      expect(r.first.code).toBe(7);
      expect(statuses(r.first)).toEqual({ 'AUD-1': 'unknown' });
      expect(r.first.stderr).toMatch(/answered with the record of "SOMEONE-ELSE"/);
      expect(r.second.code).toBe(7);
      expect(r.svc.creates).toBe(1);
    });

    it('an older payout of 5000 EUR under the same reference: ours failed, never sent under it', async () => {
      const r = await twoRuns(firstAnswers({ apply: 'none', cut: true }), {
        n: 2,
        setup: (s) =>
          s.preload({
            reference_id: 'AUD-1',
            amount: 5000,
            currency: 'EUR',
            recipient: 'x@example.com',
          }),
      });
      const doc = JSON.parse(r.first.stdout) as Doc;
      expect(doc.results[0]).toMatchObject({ reference_id: 'AUD-1', status: 'failed' });
      expect(doc.results[0]!.message).toMatch(
        /another payout under this reference_id \(amount 5000/,
      );
      expect(statuses(r.first)['AUD-2']).toBe('success');
      expect(r.first.code).toBe(4);
      expect(r.failedOut[0]).toEqual(['AUD-1']);
      expect(statuses(r.second)['AUD-1']).toBe('failed');
      expect(r.svc.posts.get('AUD-1')).toBe(1);
    });

    it('create results whose amounts differ from what was sent are read back', async () => {
      const r = await twoRuns(
        firstAnswers({
          body: resultsBody((results) => results.map((x) => ({ ...x, amount: 999 }))),
        }),
      );
      expect(r.first.stderr).toMatch(/says amount 999, not the 10.50 sent/);
      expect(r.svc.gets).toBeGreaterThanOrEqual(4);
      expect(r.first.code).toBe(0);
    });

    it('duplicate results with different statuses are read back', async () => {
      const r = await twoRuns(
        firstAnswers({
          body: resultsBody((results) => [...results, { ...results[0], status: 'failed' }]),
        }),
      );
      expect(r.first.stderr).toMatch(/reported this payout twice, as success and failed/);
      expect(statuses(r.first)['AUD-1']).toBe('success');
      expect(r.first.code).toBe(0);
    });
  });

  verdictOnly('6. undocumented statuses', () => {
    it('"processing" is read back once; a documented status from the GET wins', async () => {
      const r = await twoRuns(
        firstAnswers({
          body: resultsBody((results) => results.map((x) => ({ ...x, status: 'processing' }))),
        }),
      );
      expect(statuses(r.first)['AUD-1']).toBe('success');
      expect(r.first.code).toBe(0);
    });
  });

  verdictOnly('6b. an undocumented status the read-back confirms', () => {
    it('is kept as it came (service_status), counted unknown, exit 5, never in --failed-out', async () => {
      const r = await twoRuns(
        firstAnswers({
          heldAs: 'processing',
          body: resultsBody((results) => results.map((x) => ({ ...x, status: 'processing' }))),
        }),
      );
      const doc = JSON.parse(r.first.stdout) as Doc & {
        unknown_count: number;
        failed_count: number;
      };
      // --json's status is enumerated: the service's word travels in service_status.
      expect(doc.results.map((x) => [x.status, x.service_status])).toEqual(
        Array(4).fill(['undocumented', 'processing']),
      );
      expect(doc.unknown_count).toBe(4);
      expect(doc.failed_count).toBe(0);
      expect(r.first.code).toBe(5);
      expect(r.failedOut[0]).toEqual([]);
      expect(r.svc.creates).toBe(1);
    });
  });

  verdictOnly('9. Retry-After on a 503', () => {
    it('is honoured before the read-back', async () => {
      const clock = new FakeClock();
      const r = await twoRuns(
        firstAnswers({
          status: 503,
          headers: { 'retry-after': '7' },
          body: { success: false, message: ['Service Unavailable'], data: [] },
        }),
        { clock },
      );
      expect(clock.waits).toContain(7000);
      expect(r.first.code).toBe(0);
    });
  });
});
