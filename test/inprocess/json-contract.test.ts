import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startServer } from '../helpers/http-servers.js';
import { type CreatePolicy, type LedgerService, ledgerPerTest } from '../helpers/ledger-service.js';
import { clockStoppedAtLongWait, FakeClock, type MainResult, runMain } from '../helpers/main.js';

// Issue 26: --json is a contract. Every exit prints one document of fixed keys (runMain
// checks each against docs/schema/), with every row the run reached and an error object
// whenever the exit code is not 0, 4 or 5. And the words around it are plain.

const fixture = ledgerPerTest();

interface Result {
  reference_id: string;
  status: string;
  amount: string;
  charges: string | null;
}

interface Doc {
  exit_code: number;
  payout_count: number | null;
  charges: Record<string, string> | null;
  charges_unknown_count: number | null;
  outcome_unknown: string[];
  error: { type: string; message: string; exit_code: number; problems: unknown[] | null } | null;
  results: Result[];
}

/** Ten payouts of 1.25 EUR in a file of a fresh home. */
function tenPayouts(): { file: string; env: Record<string, string> } {
  const home = fixture.home();
  const file = join(home.dir, 'run.csv');
  const rows = Array.from({ length: 10 }, (_, i) => `ROW-${i + 1},1.25,EUR,r${i + 1}@example.com`);
  writeFileSync(file, `reference_id,amount,currency,recipient\n${rows.join('\n')}\n`);
  return { file, env: home.env };
}

/** Sends the ten payouts, 2 a request, one request at a time, to a ledger with this policy. */
async function send(
  policy: CreatePolicy,
  opts: { args?: string[]; clock?: FakeClock; interrupt?: AbortSignal } = {},
): Promise<{ r: MainResult; svc: LedgerService; file: string; env: Record<string, string> }> {
  const svc = await fixture.start(policy);
  const { file, env } = tenPayouts();
  const args = ['send', file, '--yes', '--chunk-size', '2', '--concurrency', '1'];
  const r = await runMain([...args, ...(opts.args ?? ['--json'])], {
    env: { ...svc.env(env), PAYOUTS_TIMEOUT: '2' },
    clock: opts.clock ?? new FakeClock(),
    interrupt: opts.interrupt,
  });
  return { r, svc, file, env };
}

function doc(r: MainResult): Doc {
  return JSON.parse(r.stdout) as Doc;
}

const REJECTED = {
  apply: 'none' as const,
  status: 401,
  body: { success: false, message: ['Invalid API credentials'], data: [] },
};

describe('--json on every exit', () => {
  it('bad credentials (exit 3): every row, and an error object', async () => {
    const { r } = await send((n) => (n === 2 ? REJECTED : {}));
    expect(r.code).toBe(3);
    const d = doc(r);
    expect(d.error).toMatchObject({ type: 'InvalidCredentialsError', exit_code: 3 });
    expect(d.results).toHaveLength(10);
  });

  it('service down (exit 7): every row not sent, an error object in plain words', async () => {
    const { file, env } = tenPayouts();
    const closed = await startServer((_req, res) => res.end());
    const url = closed.url;
    await closed.close();
    const r = await runMain(['send', file, '--yes', '--json'], {
      env: { ...env, PAYOUTS_BASE_URL: url, PAYOUTS_CLIENT_ID: 'c', PAYOUTS_CLIENT_SECRET: 's' },
      clock: new FakeClock(),
    });
    expect(r.code).toBe(7);
    const d = doc(r);
    expect(d.error).toMatchObject({ type: 'NetworkError', exit_code: 7 });
    expect(d.error?.message).toMatch(/could not reach 127\.0\.0\.1:\d+ \(connection refused\)/);
    expect(d.results.map((x) => x.status)).toEqual(Array(10).fill('not_sent'));
    expect(r.stderr).not.toMatch(/ECONNREFUSED|UND_ERR/);
  });

  it('a usage error is a send document with the error, and no results', async () => {
    const r = await runMain(['send', 'x.csv', '--json', '--no-such-flag']);
    expect(r.code).toBe(2);
    expect(doc(r)).toMatchObject({
      command: 'send',
      exit_code: 2,
      error: { type: 'UsageError' },
      results: [],
    });
    const s = await runMain(['status', 'R-1', '--json', '--concurrency', '99']);
    expect(s.code).toBe(2);
    expect(doc(s)).toMatchObject({ command: 'status', error: { type: 'UsageError' } });
  });

  it('an input error lists its problems in the error object', async () => {
    const home = fixture.home();
    const file = join(home.dir, 'bad.csv');
    writeFileSync(file, 'reference_id,amount,currency,recipient\nB-1,1,234.00,EUR,x\n');
    const r = await runMain(['send', file, '--json', '--dry-run'], { env: home.env });
    expect(r.code).toBe(2);
    expect(doc(r)).toMatchObject({ command: 'send', dry_run: true, exit_code: 2, results: [] });
    expect(doc(r).error?.problems).toHaveLength(1);
  });

  it('a read-back that fails on resume: every row, an error object, and the --report', async () => {
    // First run: the third request is cut and Ctrl-C stops the wait to read it back.
    const { clock, stop } = clockStoppedAtLongWait();
    const first = await send((n) => (n === 3 ? { apply: 'none', cut: true } : {}), {
      clock,
      interrupt: stop.signal,
    });
    expect(first.r.code).toBe(130);
    // Second run: the service answers no lookup, so the payouts in doubt stay in doubt.
    first.svc.onGet = (_ref, res) => {
      res.writeHead(503).end();
      return true;
    };
    const report = join(first.file, '..', 'report.csv');
    const args = ['send', first.file, '--yes', '--json', '--report', report];
    const r = await runMain(args, { env: first.svc.env(first.env), clock: new FakeClock() });
    expect(r.code).toBe(7);
    const d = doc(r);
    expect(d.error).toMatchObject({ type: 'OutcomeUnknownError', exit_code: 7 });
    expect(d.results).toHaveLength(10);
    expect(d.outcome_unknown).toEqual(['ROW-5', 'ROW-6']);
    expect(d.results.filter((x) => x.status === 'unknown').map((x) => x.reference_id)).toEqual([
      'ROW-5',
      'ROW-6',
    ]);
    const lines = readFileSync(report, 'utf8').trim().split('\n');
    expect(lines).toHaveLength(11);
    expect(r.stderr).toContain(`Report written to ${report}`);
    expect(first.svc.appliedTwice()).toEqual([]);
  });
});

describe('charges that are true', () => {
  it('are decimal strings at the top and per row; payouts read back count as unknown', async () => {
    // The third request is applied but its answer is cut: its two payouts are read back.
    const { r } = await send((n) => (n === 3 ? { cut: true } : {}));
    expect(r.code).toBe(0);
    const d = doc(r);
    expect(d.charges).toEqual({ EUR: '4.00' });
    expect(d.charges_unknown_count).toBe(2);
    expect(d.results[0]?.charges).toBe('0.50');
    expect(d.results[4]?.charges).toBeNull();
    const human = await send((n) => (n === 3 ? { cut: true } : {}), { args: [] });
    // The closing line: on stdout, or beside a table on a pipe.
    expect(human.r.stdout + human.r.stderr).toContain(
      'charges EUR 4.00 (+ 2 payouts with unknown charges)',
    );
  });
});

describe('--quiet', () => {
  it('leaves stderr to errors: no summary, notes or next steps', async () => {
    const { r } = await send(() => ({}), { args: ['--quiet'] });
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain('ROW-10');
    const bad = await send((n) => (n === 1 ? REJECTED : {}), { args: ['--quiet', '--json'] });
    expect(bad.r.code).toBe(3);
    expect(bad.r.stderr).toMatch(/^error: /);
    expect(bad.r.stderr.trim().split('\n')).toHaveLength(1);
  });
});

describe('next steps', () => {
  /** A reply whose results say `status` for every payout. */
  const all = (status: string) => ({
    body: (results: Array<Record<string, unknown>>) => ({
      success: true,
      message: [],
      data: {
        success_count: 0,
        failed_count: status === 'failed' ? results.length : 0,
        results: results.map((x) => ({ ...x, status })),
      },
    }),
  });

  it('end with the run id, the command that watches pending payouts, and where failed ones go', async () => {
    // The ledger holds the failed ones as failed too, should a read-back ask.
    const failed = { ...all('failed'), heldAs: 'failed' };
    const { r } = await send((n) => (n === 1 ? all('pending') : n === 2 ? failed : {}), {
      args: [],
    });
    expect(r.code).toBe(4);
    expect(r.stderr).toContain(
      '2 payouts are not final yet; to watch them until they are: payouts status ROW-1 ROW-2 --watch',
    );
    expect(r.stderr).toMatch(
      /2 payouts failed or were canceled: a failed payout needs a new reference_id; `payouts runs show [0-9a-f]{16} --failed-out FILE` writes/,
    );
    const last = r.stderr.trim().split('\n').at(-1);
    expect(last).toMatch(/^Run [0-9a-f]{16}: payouts runs show [0-9a-f]{16}$/);
  });

  it('end a stopped send with its run id too', async () => {
    const stop = new AbortController();
    const { r } = await send(
      (n) => {
        if (n === 2) stop.abort();
        return {};
      },
      { args: [], interrupt: stop.signal },
    );
    expect(r.code).toBe(130);
    expect(r.stdout).toContain('Interrupted: 4 of 10 payouts sent');
    expect(r.stderr.trim().split('\n').at(-1)).toMatch(/^Run [0-9a-f]{16}: payouts runs show /);
  });
});
