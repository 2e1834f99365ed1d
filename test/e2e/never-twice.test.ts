import { afterEach, describe, expect, it } from 'vitest';
import { parseJsonStdout, runCli, spawnCli } from '../helpers/cli.js';
import { doubleSends, testService, writeRun } from '../helpers/sandbox.js';

// What only a process shows: killed mid-request, interrupted, and two at once. The other
// never-pay-twice cases run in process: test/inprocess/never-twice.test.ts.

let service: Awaited<ReturnType<typeof testService>> | undefined;
afterEach(async () => {
  await service?.close();
  service = undefined;
});

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

describe('never pay twice, as a process', () => {
  it('the CLI killed with SIGKILL while a request is in flight, then run again', async () => {
    service = await testService({ latencyMs: 800 });
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
    // Let the service finish with what it received before the kill (it answers after its latency).
    await new Promise((r) => setTimeout(r, 1000));
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
