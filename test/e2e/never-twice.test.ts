import { describe, expect, it } from 'vitest';
import { parseJsonStdout, runCli, spawnCli } from '../helpers/cli.js';
import {
  type CreatePolicy,
  holdsFirst,
  type LedgerService,
  ledgerPerTest,
} from '../helpers/ledger-service.js';
import { FakeClock, runMain } from '../helpers/main.js';
import { recycledDatabase } from '../helpers/pg.js';
import { writeRun } from '../helpers/sandbox.js';
import { STOPPING } from '../helpers/signal-runs.js';

// What only a process shows: killed mid-request, interrupted, and two at once. The other
// never-pay-twice cases run in process: test/inprocess/never-twice.test.ts. What follows the
// process (the re-run, the second of two runs) runs in this process: `again`.

let svc: LedgerService | undefined;
const fixture = ledgerPerTest();

/**
 * A loopback service answering by `policy`, a private home, a run of `n` payouts and its env,
 * with a response timeout of `timeout` seconds.
 */
async function setUp(policy: CreatePolicy, n: number, timeout = '2') {
  svc = await fixture.start(policy);
  const home = fixture.home();
  const { file, refs } = writeRun(home.dir, n);
  // A short response timeout keeps a read-back's quiet time short.
  const env = { ...svc.env(home.env), PAYOUTS_TIMEOUT: timeout };
  return { service: svc, file, refs, env };
}

/** Waits until the service has received `n` create requests. */
async function untilCreates(service: LedgerService, n: number): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (service.creates < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
}

/** Asserts every reference was applied exactly once, and none posted again after that. */
function expectExactlyOnce(service: LedgerService, refs: string[]): void {
  expect([...service.held.keys()].sort()).toEqual([...refs].sort());
  expect([...service.held.values()].filter((h) => h.times !== 1)).toEqual([]);
  expect(service.appliedTwice()).toEqual([]);
}

/**
 * `payouts ARGS` in this process, after (or beside) the process under test: its quiet times
 * on a fake clock that goes on from now, as the process's requests were sent before.
 */
function again(args: string[], env: Record<string, string>) {
  return runMain(args, { env, clock: new FakeClock(Date.now()) });
}

interface Doc {
  success_count: number;
  sent_earlier_count: number;
  results: Array<{ reference_id: string; status: string; sent_earlier?: boolean }>;
}

describe('never pay twice, as a process', () => {
  it('the CLI killed with SIGKILL while a request is in flight, then run again', async () => {
    // The second request is applied and never answered: it is in flight when the kill comes.
    // The third may have been prepared and not sent: the re-run waits out its quiet time and
    // reads once more before sending it, so a 1 s response timeout keeps those waits short.
    const { service, file, refs, env } = await setUp(
      (n) => (n === 2 ? { hold: new Promise(() => {}) } : {}),
      30,
      '1',
    );
    const child = spawnCli(['send', file, '--yes', '--chunk-size', '10', '--concurrency', '1'], {
      env,
    });
    child.stdout.resume();
    child.stderr.resume();
    await untilCreates(service, 2);
    child.kill('SIGKILL');
    await new Promise((r) => child.on('close', r));
    const rerun = await again(['send', file, '--yes', '--json', '--chunk-size', '10'], env);
    expect(rerun.code).toBe(0);
    expect(rerun.stderr).toMatch(
      /Reading back \d+ payouts? whose earlier request has no recorded outcome/,
    );
    const doc = parseJsonStdout<Doc>(rerun);
    expect(doc.success_count).toBe(30);
    expect(doc.sent_earlier_count).toBeGreaterThanOrEqual(10);
    expectExactlyOnce(service, refs);
  });

  it('killed with SIGKILL while a request is in flight, with a shared history: the server frees the lock', async () => {
    const { service, file, refs, env } = await setUp(
      (n) => (n === 2 ? { hold: new Promise(() => {}) } : {}),
      20,
    );
    const shared = { ...env, PAYOUTS_STATE_URL: await recycledDatabase() };
    const child = spawnCli(['send', file, '--yes', '--chunk-size', '10', '--concurrency', '1'], {
      env: shared,
    });
    child.stdout.resume();
    child.stderr.resume();
    await untilCreates(service, 2);
    child.kill('SIGKILL');
    await new Promise((r) => child.on('close', r));
    // Another folder: only the shared history knows what the killed run sent.
    const stateHome = (env as Record<string, string>).XDG_STATE_HOME;
    const other = { ...shared, XDG_STATE_HOME: `${stateHome}-other` };
    const rerun = await again(['send', file, '--yes', '--json', '--chunk-size', '10'], other);
    expect(rerun.code).toBe(0);
    expect(rerun.stderr).toMatch(/Reading back \d+ payouts whose earlier request/);
    expect(parseJsonStdout<Doc>(rerun).success_count).toBe(20);
    expectExactlyOnce(service, refs);
  });

  it('two runs of the same file at once: the second exits 8 naming the first, nothing is sent twice', async () => {
    // The first run's first request is held until the second run has exited.
    let release = () => {};
    const secondDone = new Promise<void>((r) => {
      release = r;
    });
    const { service, file, refs, env } = await setUp(
      (n) => (n === 1 ? { hold: secondDone } : {}),
      30,
    );
    const first = runCli(['send', file, '--yes', '--chunk-size', '5', '--concurrency', '1'], {
      env,
    });
    await untilCreates(service, 1);
    const second = await again(['send', file, '--yes'], env);
    release();
    expect(second.code).toBe(8);
    expect(second.stderr).toMatch(/another payouts send to this service is running \(pid \d+/);
    expect((await first).code).toBe(0);
    expectExactlyOnce(service, refs);
  });

  it('SIGINT stops new requests, lets the one in flight finish, and exits 130; a re-run finishes', async () => {
    // The first request is answered only once the run has said it stops: the signal lands
    // while it is in flight, however busy the machine is.
    const first = holdsFirst();
    const { service, file, refs, env } = await setUp(first.policy, 30);
    const child = spawnCli(['send', file, '--yes', '--chunk-size', '10', '--concurrency', '1'], {
      env,
    });
    // The closing lines go to standard output with the results.
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
      if (stderr.includes(STOPPING)) first.release();
    });
    await first.posted;
    child.kill('SIGINT');
    const code = await new Promise((r) => child.on('close', r));
    expect(code).toBe(130);
    expect(stdout).toMatch(
      /Interrupted: 10 of 30 payouts sent \(10 succeeded\); 20 not sent, EUR [\d.]+\. Run the same command again to send them; nothing will be sent twice\./,
    );
    expect(service.creates).toBe(1);
    const rerun = await again(['send', file, '--yes', '--json'], env);
    expect(rerun.code).toBe(0);
    expect(parseJsonStdout<Doc>(rerun).sent_earlier_count).toBe(10);
    expectExactlyOnce(service, refs);
  });
});
