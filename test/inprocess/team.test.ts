import { writeFileSync } from 'node:fs';
import { hostname, userInfo } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { serviceKeyOf } from '../../src/core/service.js';
import { PgHistory } from '../../src/state/pg/history.js';
import { parseJsonStdout } from '../helpers/cli.js';
import { type CreatePolicy, holdsFirst, ledgerPerTest } from '../helpers/ledger-service.js';
import { FakeClock, type MainOptions, runMain } from '../helpers/main.js';
import { freshDatabase, recycledDatabase } from '../helpers/pg.js';

// Issue 32, part 2: two laptops on one PostgreSQL history do not block each other.

const fixture = ledgerPerTest();
const me = `${userInfo().username}@${hostname()}`;

/** A payout file of `n` rows whose references start with `prefix`. */
function payoutFile(dir: string, prefix: string, n: number): string {
  const file = join(dir, `${prefix.toLowerCase()}.csv`);
  const rows = Array.from(
    { length: n },
    (_, i) => `${prefix}-${i + 1},${i + 1}.00,EUR,r${i}@ex.com`,
  );
  writeFileSync(file, `reference_id,amount,currency,recipient\n${rows.join('\n')}\n`);
  return file;
}

/**
 * Two laptops (a state folder each) on one shared history, against one ledger service: an
 * empty, migrated one unless `fresh` (no tables yet).
 */
async function team(policy?: CreatePolicy, how: { fresh?: boolean } = {}) {
  const url = how.fresh ? await freshDatabase() : await recycledDatabase();
  const svc = await fixture.start(policy);
  const laptops = [fixture.home(), fixture.home()] as const;
  const run = (at: 0 | 1, args: string[], opts: MainOptions = {}) =>
    runMain(args, {
      env: { ...svc.env(laptops[at].env), PAYOUTS_STATE_URL: url },
      clock: new FakeClock(),
      ...opts,
    });
  return { url, svc, laptops, run };
}

describe('a team on one shared history', () => {
  it('a question left open blocks no one: the other laptop sends meanwhile', async () => {
    const t = await team();
    const mine = payoutFile(t.laptops[0].dir, 'MINE', 3);
    const theirs = payoutFile(t.laptops[1].dir, 'THEIRS', 2);
    const typed = new PassThrough();
    let asking!: () => void;
    const atQuestion = new Promise<void>((r) => {
      asking = r;
    });
    // The prompt starts reading standard input when it asks.
    typed.once('resume', () => asking());
    const first = t.run(0, ['send', mine], {
      input: typed,
      terminal: { columns: 100 },
      env: { ...t.svc.env(t.laptops[0].env), PAYOUTS_STATE_URL: t.url, NO_COLOR: '1' },
    });
    await atQuestion;
    const second = await t.run(1, ['send', theirs, '--yes', '--json']);
    expect(second.code).toBe(0);
    expect(t.svc.held.has('THEIRS-1')).toBe(true);
    expect(t.svc.held.has('MINE-1')).toBe(false);
    typed.end('y\n');
    const answered = await first;
    expect(answered.code).toBe(0);
    expect(answered.stderr).toMatch(
      /History: +shared \(postgres:\/\/[^:@/]+@127\.0\.0\.1:\d+\/\w+\)/,
    );
    expect([...t.svc.held.keys()].sort()).toEqual(
      ['MINE-1', 'MINE-2', 'MINE-3', 'THEIRS-1', 'THEIRS-2'].sort(),
    );
    expect(t.svc.appliedTwice()).toEqual([]);
  });

  it('a question answered after the other laptop sent the same payouts sends nothing', async () => {
    const t = await team();
    const file = payoutFile(t.laptops[0].dir, 'SAME', 2);
    writeFileSync(
      join(t.laptops[1].dir, 'same.csv'),
      `${'reference_id,amount,currency,recipient\n'}SAME-1,1.00,EUR,r0@ex.com\nSAME-2,2.00,EUR,r1@ex.com\n`,
    );
    const typed = new PassThrough();
    const atQuestion = new Promise<void>((r) => typed.once('resume', () => r()));
    const first = t.run(0, ['send', file], { input: typed, terminal: { columns: 100 } });
    await atQuestion;
    expect((await t.run(1, ['send', join(t.laptops[1].dir, 'same.csv'), '--yes'])).code).toBe(0);
    typed.end('y\n');
    const late = await first;
    expect(late.code).toBe(8);
    expect(late.stderr).toMatch(
      /while the question was open, another run recorded some of these payouts: nothing was sent/,
    );
    expect(t.svc.creates).toBe(1);
    expect(t.svc.appliedTwice()).toEqual([]);
  });

  it('a busy service is exit 8 naming who and what it does; --wait waits for it', async () => {
    const t = await team();
    const file = payoutFile(t.laptops[0].dir, 'WAIT', 2);
    const other = await PgHistory.open(t.url);
    const lock = await other.lockService(serviceKeyOf(t.svc.url), {
      host: 'laptop-2.invalid',
      user: 'ana',
      pid: 4242,
      started_at: '2026-11-24T11:58:00.000Z',
      command: 'payouts send june.csv',
    });
    try {
      const busy = await t.run(0, ['send', file, '--yes']);
      expect(busy.code).toBe(8);
      expect(busy.stderr).toMatch(
        /another payouts send to this service is running.*on host laptop-2\.invalid, user ana, database role \w+, pid 4242, started 2026-11-24T11:58:00\.000Z, sending/,
      );
      expect(busy.stderr).toContain('--wait');
      // Limited, the wait gives up with the same code.
      const gaveUp = await t.run(0, ['send', file, '--yes', '--wait=5']);
      expect(gaveUp.code).toBe(8);
      expect(gaveUp.stderr).toMatch(
        /\(ana@laptop-2\.invalid, sending since .*\): waiting for it to finish, at most 5 s/,
      );
      expect(t.svc.creates).toBe(0);
      // The lock is given back during the wait: the run goes on and sends.
      const clock = new FakeClock();
      const sleep = clock.sleep;
      clock.sleep = async (ms, signal) => {
        await lock.release();
        return sleep(ms, signal);
      };
      // Stopped while it waits (once it says it waits, connected and in line): exit 130,
      // nothing sent.
      const stop = new AbortController();
      const stopped = await t.run(0, ['send', file, '--yes', '--wait'], {
        interrupt: stop.signal,
        onStderr: (text) => {
          if (text.includes('Ctrl-C stops waiting')) stop.abort();
        },
      });
      expect(stopped.code).toBe(130);
      expect(stopped.stderr).toMatch(/stopped while waiting for another send: nothing was sent/);
      expect(t.svc.creates).toBe(0);
      const waited = await t.run(0, ['send', file, '--yes', '--wait'], { clock });
      expect(waited.code).toBe(0);
      expect(waited.stderr).toMatch(/waiting for it to finish; Ctrl-C stops waiting/);
      // When the wait ends, a line says so before the run goes on (one fake second of waiting).
      expect(waited.stderr).toMatch(
        /^The other send \(ana@laptop-2\.invalid, sending since .*\) finished after 1 s; this one goes on$/m,
      );
      expect(t.svc.held.size).toBe(2);
    } finally {
      await other.close();
    }
  });

  it('payouts runs on the other laptop: who sent each run, the live one running, no finishing command for it', async () => {
    const { policy, posted: inFlight, release } = holdsFirst();
    const t = await team(policy);
    const file = payoutFile(t.laptops[0].dir, 'LIVE', 4);
    const sending = t.run(0, ['send', file, '--yes', '--chunk-size', '2', '--concurrency', '1']);
    await inFlight;
    const seen = await t.run(1, ['runs', '--json']);
    const text = await t.run(1, ['runs'], { terminal: { columns: 160 } });
    release();
    const live = parseJsonStdout<{
      runs: Array<{
        running: boolean;
        sent_by: { os_user: string; host: string };
        finish_command: string | null;
      }>;
    }>(seen).runs;
    expect(live).toHaveLength(1);
    expect(live[0]!.running).toBe(true);
    expect(`${live[0]!.sent_by.os_user}@${live[0]!.sent_by.host}`).toBe(me);
    expect(live[0]!.finish_command).toBeNull();
    expect((await sending).code).toBe(0);
    expect(text.stdout).toContain(me);
    expect(text.stdout).toMatch(/running: /);
    expect(text.stderr).toMatch(/is being sent by .* right now: leave it to its sender/);
    expect(text.stderr).not.toMatch(/to finish it, run/);

    // A sender stopped half-way is gone: now the other laptop gets the finishing command.
    const stop = new AbortController();
    const svc2 = await fixture.start((n) => {
      if (n === 1) stop.abort();
      return {};
    });
    const half = payoutFile(t.laptops[0].dir, 'HALF', 4);
    const env = (at: 0 | 1) => ({ ...svc2.env(t.laptops[at].env), PAYOUTS_STATE_URL: t.url });
    const stopped = await runMain(
      ['send', half, '--yes', '--chunk-size', '2', '--concurrency', '1'],
      {
        env: env(0),
        clock: new FakeClock(),
        interrupt: stop.signal,
      },
    );
    expect(stopped.code).toBe(130);
    const after = await runMain(['runs', '--json'], { env: env(1) });
    const { runs } = parseJsonStdout<{
      runs: Array<{ running: boolean; inputs: string[]; finish_command: string | null }>;
    }>(after);
    const gone = runs.find((r) => r.inputs[0] === half)!;
    expect(gone.running).toBe(false);
    expect(gone.finish_command).toMatch(/^payouts send .*half\.csv/);
  });

  it('the summary says when the history is this folder only', async () => {
    const svc = await fixture.start();
    const home = fixture.home();
    const file = payoutFile(home.dir, 'LOCAL', 1);
    const r = await runMain(['send', file, '--dry-run'], { env: svc.env(home.env) });
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/History: +this folder only\n/);
  });
});

describe('config check with a shared history', () => {
  it('connects to the state URL and says what it found', async () => {
    const t = await team(undefined, { fresh: true });
    const r = await t.run(0, ['config', 'check']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /^Shared history reached at postgres:\/\/.+: PostgreSQL \d+.*, no TLS, role \w+; no payouts tables yet/m,
    );
    // The whole answer on one stream.
    expect(r.stdout).toMatch(/^Credentials accepted by http:\S+ \(profile /);
    expect(r.stderr).toBe('');
    const json = await t.run(0, ['config', 'check', '--json']);
    expect(parseJsonStdout<{ history: { tls: boolean } }>(json).history.tls).toBe(false);
  });

  it('sslmode=verify-full against a server without TLS says what the server lacks and the choices', async () => {
    const t = await team(undefined, { fresh: true });
    const url = `${t.url}&sslmode=verify-full`;
    const env = { ...t.svc.env(t.laptops[0].env), PAYOUTS_STATE_URL: url };
    const r = await t.run(0, ['config', 'check'], { env });
    expect(r.code).toBe(7);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^error: Credentials accepted by http:\S+ .*, but /m);
    expect(r.stderr).toMatch(
      /The server does not offer TLS, which sslmode=verify-full asks for: turn TLS on at the server .* sslmode=disable/,
    );
  });
});
