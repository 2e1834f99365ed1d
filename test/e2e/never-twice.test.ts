import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseJsonStdout, runCli, spawnCli } from '../helpers/cli.js';
import { doubleSends, testService } from '../helpers/sandbox.js';

let service: Awaited<ReturnType<typeof testService>> | undefined;
afterEach(async () => {
  await service?.close();
  service = undefined;
});

/** Writes a run of `n` payouts and returns its path and references. */
function writeRun(dir: string, n: number, name = 'run.csv'): { file: string; refs: string[] } {
  const refs = Array.from({ length: n }, (_, i) => `ONCE-${String(i + 1).padStart(4, '0')}`);
  const file = join(dir, name);
  writeFileSync(
    file,
    `reference_id,amount,currency,recipient\n${refs.map((r, i) => `${r},${i + 1}.25,EUR,${r.toLowerCase()}@example.com`).join('\n')}\n`,
  );
  return { file, refs };
}

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

describe('never pay twice', () => {
  it('a server that applies a request and then cuts the connection: read back, not resent', async () => {
    service = await testService({
      faults: [{ endpoint: 'create', nth: 2, kind: 'cut-after-apply' }],
    });
    const { file, refs } = writeRun(service.home.dir, 40);
    const r = await runCli(
      ['send', file, '--yes', '--json', '--chunk-size', '10', '--concurrency', '1'],
      { env: service.env },
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
    const r = await runCli(['send', file, '--yes', '--json'], { env: service.env });
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
    const r = await runCli(
      ['send', file, '--yes', '--json', '--chunk-size', '10', '--concurrency', '2'],
      { env: service.env },
    );
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/rate limited by the service: sending 1 request at a time/);
    expect(parseJsonStdout<Doc>(r).success_count).toBe(50);
    await expectExactlyOnce(refs);
  });

  it('a request refused as too large is split in half and sent again', async () => {
    service = await testService({ maxPayoutsPerRequest: 8 });
    const { file, refs } = writeRun(service.home.dir, 30);
    const r = await runCli(['send', file, '--yes', '--json', '--chunk-size', '30'], {
      env: service.env,
    });
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/sending at most \d+ per request/);
    await expectExactlyOnce(refs);
  });

  it('a finished run run again creates nothing and reports the payouts as sent earlier', async () => {
    service = await testService();
    const { file, refs } = writeRun(service.home.dir, 12);
    const first = await runCli(['send', file, '--yes'], { env: service.env });
    expect(first.code).toBe(0);
    const creates = service.sandbox.requestCounts().create;
    const again = await runCli(['send', file, '--yes', '--json'], { env: service.env });
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
    expect((await runCli(['send', a.file, '--yes'], { env: service.env })).code).toBe(0);
    const same = join(service.home.dir, 'b.csv');
    writeFileSync(
      same,
      'reference_id,amount,currency,recipient\nONCE-0001,1.25,EUR,once-0001@example.com\nNEW-1,3.00,EUR,n@example.com\n',
    );
    const b = await runCli(['send', same, '--yes', '--json'], { env: service.env });
    expect(b.code).toBe(0);
    const doc = parseJsonStdout<Doc>(b);
    expect(doc.results.find((x) => x.reference_id === 'ONCE-0001')?.sent_earlier).toBe(true);
    const changed = join(service.home.dir, 'c.csv');
    writeFileSync(
      changed,
      'reference_id,amount,currency,recipient\nONCE-0002,999.00,EUR,once-0002@example.com\nNEW-2,3.00,EUR,n@example.com\n',
    );
    const creates = service.sandbox.requestCounts().create;
    const c = await runCli(['send', changed, '--yes'], { env: service.env });
    expect(c.code).toBe(2);
    expect(c.stderr).toMatch(/ONCE-0002.*different amount, currency or recipient/);
    expect(service.sandbox.requestCounts().create).toBe(creates);
    await expectExactlyOnce([...a.refs, 'NEW-1']);
  });

  it('the CLI killed with SIGKILL while a request is in flight, then run again', async () => {
    service = await testService({ latencyMs: 1500 });
    const { file, refs } = writeRun(service.home.dir, 30);
    const child = spawnCli(['send', file, '--yes', '--chunk-size', '10', '--concurrency', '1'], {
      env: service.env,
    });
    child.stdout.resume();
    child.stderr.resume();
    const deadline = Date.now() + 20_000;
    while (service.sandbox.requestCounts().create < 2 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    child.kill('SIGKILL');
    await new Promise((r) => child.on('close', r));
    // Let the service finish applying what it received before the kill.
    await new Promise((r) => setTimeout(r, 1800));
    const again = await runCli(['send', file, '--yes', '--json', '--chunk-size', '10'], {
      env: service.env,
    });
    expect(again.code).toBe(0);
    expect(again.stderr).toMatch(
      /Reading back \d+ payouts? whose earlier request has no recorded outcome/,
    );
    const doc = parseJsonStdout<Doc>(again);
    expect(doc.success_count).toBe(30);
    expect(doc.sent_earlier_count).toBeGreaterThanOrEqual(10);
    await expectExactlyOnce(refs);
  });

  it('two runs of the same file at once: the second exits 2 naming the first, nothing is sent twice', async () => {
    service = await testService({ latencyMs: 300 });
    const { file, refs } = writeRun(service.home.dir, 30);
    const first = runCli(['send', file, '--yes', '--chunk-size', '5', '--concurrency', '1'], {
      env: service.env,
    });
    const deadline = Date.now() + 20_000;
    while (service.sandbox.requestCounts().create < 1 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    const second = await runCli(['send', file, '--yes'], { env: service.env });
    expect(second.code).toBe(2);
    expect(second.stderr).toMatch(/another payouts send to this service is running \(pid \d+/);
    expect((await first).code).toBe(0);
    await expectExactlyOnce(refs);
  });

  it('SIGINT stops new requests, lets the one in flight finish, and exits 130; a re-run finishes', async () => {
    service = await testService({ latencyMs: 800 });
    const { file, refs } = writeRun(service.home.dir, 30);
    const child = spawnCli(['send', file, '--yes', '--chunk-size', '10', '--concurrency', '1'], {
      env: service.env,
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    child.stdout.resume();
    const deadline = Date.now() + 20_000;
    while (service.sandbox.requestCounts().create < 1 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    child.kill('SIGINT');
    const code = await new Promise((r) => child.on('close', r));
    expect(code).toBe(130);
    expect(stderr).toMatch(/Run the same command again to resume/);
    expect(service.sandbox.requestCounts().create).toBe(1);
    const again = await runCli(['send', file, '--yes', '--json'], { env: service.env });
    expect(again.code).toBe(0);
    expect(parseJsonStdout<Doc>(again).sent_earlier_count).toBe(10);
    await expectExactlyOnce(refs);
  });
});
