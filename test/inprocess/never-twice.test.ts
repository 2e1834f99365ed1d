import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseJsonStdout } from '../helpers/cli.js';
import { runsOnFakeClock } from '../helpers/main.js';
import { STORES, storeEnv } from '../helpers/pg.js';
import { doubleSends, testService, writeRun } from '../helpers/sandbox.js';

// Never pay twice, with the CLI run in this process; the cases that need a process of its
// own (SIGKILL, SIGINT, two runs at once) are in test/e2e/never-twice.test.ts.

let service: Awaited<ReturnType<typeof testService>> | undefined;
afterEach(async () => {
  await service?.close();
  service = undefined;
});

/** Runs `payouts ARGS` in process on the test's own clock. */
const run = runsOnFakeClock();

/** Asserts every reference exists exactly once at the service, with no second create attempt. */
async function expectExactlyOnce(refs: string[]): Promise<void> {
  const ledger = await service!.ledger();
  expect([...ledger.keys()].sort()).toEqual([...refs].sort());
  expect(doubleSends(ledger)).toEqual([]);
}

interface Doc {
  success_count: number;
  sent_earlier_count: number;
  results: Array<{ reference_id: string; status: string; sent_earlier?: boolean }>;
}

describe.each(STORES)('never pay twice (%s)', (store) => {
  const withStore = storeEnv(store, { migrated: true });

  it('a server that applies a request and then cuts the connection: read back, not resent', async () => {
    service = await testService({
      faults: [{ endpoint: 'create', nth: 2, kind: 'cut-after-apply' }],
    });
    const { file, refs } = writeRun(service.home.dir, 40);
    const r = await run(
      ['send', file, '--yes', '--json', '--chunk-size', '10', '--concurrency', '1'],
      { env: withStore(service.env) },
    );
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/reading 10 payouts back/);
    expect(parseJsonStdout<Doc>(r).success_count).toBe(40);
    expect(service.sandbox.requestCounts().create).toBe(4);
    await expectExactlyOnce(refs);
  });

  it('a connection cut before applying: read back as not found, then sent once', async () => {
    service = await testService({
      faults: [{ endpoint: 'create', nth: 1, kind: 'cut-before-apply' }],
    });
    const { file, refs } = writeRun(service.home.dir, 10);
    const r = await run(['send', file, '--yes', '--json'], { env: withStore(service.env) });
    expect(r.code).toBe(0);
    expect(service.sandbox.requestCounts().create).toBe(2);
    await expectExactlyOnce(refs);
  });

  it('a 500 and a 429 in the middle of a run', async () => {
    service = await testService({
      faults: [
        { endpoint: 'create', nth: 2, kind: 'http500' },
        { endpoint: 'create', nth: 4, kind: 'http429', retryAfterSeconds: 1 },
      ],
    });
    const { file, refs } = writeRun(service.home.dir, 50);
    const r = await run(
      ['send', file, '--yes', '--json', '--chunk-size', '10', '--concurrency', '2'],
      { env: withStore(service.env) },
    );
    expect(r.code).toBe(0);
    const doc = parseJsonStdout<Doc & { rate_limited_count: number }>(r);
    expect(doc.rate_limited_count).toBe(1);
    expect(doc.success_count).toBe(50);
    await expectExactlyOnce(refs);
  });

  it('a request refused as too large is split in half and sent again', async () => {
    service = await testService({ maxPayoutsPerRequest: 8 });
    const { file, refs } = writeRun(service.home.dir, 30);
    const r = await run(['send', file, '--yes', '--json', '--chunk-size', '30'], {
      env: withStore(service.env),
    });
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/sending at most \d+ per request/);
    await expectExactlyOnce(refs);
  });

  it('a finished run run again creates nothing and reports the payouts as sent earlier', async () => {
    service = await testService();
    const { file, refs } = writeRun(service.home.dir, 12);
    const first = await run(['send', file, '--yes'], { env: withStore(service.env) });
    expect(first.code).toBe(0);
    const creates = service.sandbox.requestCounts().create;
    const again = await run(['send', file, '--yes', '--json'], { env: withStore(service.env) });
    expect(again.code).toBe(0);
    expect(service.sandbox.requestCounts().create).toBe(creates);
    const doc = parseJsonStdout<Doc>(again);
    expect(doc.sent_earlier_count).toBe(12);
    expect(doc.success_count).toBe(12);
    expect(doc.results.every((x) => x.sent_earlier === true && x.status === 'success')).toBe(true);
    await expectExactlyOnce(refs);
  });

  it('a reference sent by an earlier run of another file is not sent again; with a different amount the run stops', async () => {
    service = await testService();
    const a = writeRun(service.home.dir, 5, 'a.csv');
    expect((await run(['send', a.file, '--yes'], { env: withStore(service.env) })).code).toBe(0);
    const same = join(service.home.dir, 'b.csv');
    writeFileSync(
      same,
      'reference_id,amount,currency,recipient\nONCE-0001,1.25,EUR,once-0001@example.com\nNEW-1,3.00,EUR,n@example.com\n',
    );
    const b = await run(['send', same, '--yes', '--json'], { env: withStore(service.env) });
    expect(b.code).toBe(0);
    const doc = parseJsonStdout<Doc>(b);
    expect(doc.results.find((x) => x.reference_id === 'ONCE-0001')?.sent_earlier).toBe(true);
    const changed = join(service.home.dir, 'c.csv');
    writeFileSync(
      changed,
      'reference_id,amount,currency,recipient\nONCE-0002,999.00,EUR,once-0002@example.com\nNEW-2,3.00,EUR,n@example.com\n',
    );
    const creates = service.sandbox.requestCounts().create;
    const c = await run(['send', changed, '--yes'], { env: withStore(service.env) });
    expect(c.code).toBe(2);
    expect(c.stderr).toMatch(/ONCE-0002.*different amount, currency or recipient/);
    expect(service.sandbox.requestCounts().create).toBe(creates);
    await expectExactlyOnce([...a.refs, 'NEW-1']);
  });
});
