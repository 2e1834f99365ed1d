import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { serviceKeyOf } from '../../src/core/service.js';
import { openDatabase } from '../../src/state/index.js';
import { PgHistory } from '../../src/state/pg/history.js';
import { approvalHash, contentHash } from '../../src/state/approval-hash.js';
import { payoutHash } from '../../src/state/hash.js';
import { sendJson } from '../helpers/http-servers.js';
import { type CreatePolicy, failsThese, ledgerPerTest } from '../helpers/ledger-service.js';
import { FakeClock, runMain, runQueued } from '../helpers/main.js';
import {
  HEADER,
  peoplePaidTwice,
  RETRY_HEADER,
  retrySetUp,
  row,
  runIdOf,
  sendArgs,
} from '../helpers/retry.js';
import { recycledDatabase, schemaOf, storeEnv, STORES, teamRoles } from '../helpers/pg.js';

// Where the money controls meet: a retry, the history a person may write into, and the
// service's word. The loopback service has its duplicate checks off, so what it applies twice
// is counted, and a retry's new reference is counted per person paid.

const fixture = ledgerPerTest();

/** A service, a home, a writer of its files and a runner against them. */
const setUp = (
  withStore: (env: Record<string, string>) => Record<string, string>,
  policy?: CreatePolicy,
) => retrySetUp(fixture, withStore, policy);

/** Sends one payout a request, without a question. */
const send = sendArgs;

/** Runs statements as a PostgreSQL role. */
async function asRole(url: string, statements: string[]): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    for (const s of statements) await c.query(s);
  } finally {
    await c.end();
  }
}

/** Writes statements into the history: as a person's role on PostgreSQL, into state.db else. */
async function forge(
  store: string,
  t: { env: Record<string, string>; home: { env: Record<string, string> } },
  statements: string[],
): Promise<void> {
  if (store === 'postgres') {
    const { ana } = await teamRoles(t.env.PAYOUTS_STATE_URL!);
    await asRole(ana, statements);
    return;
  }
  const db = openDatabase(join(t.home.env.XDG_STATE_HOME!, 'payouts', 'state.db'));
  for (const s of statements) db.exec(s);
  db.close();
}

/** A forged run `F` copying run `runId`'s header: statements inserting it. */
const FORGED_RUN = (runId: string, fake: string) =>
  `INSERT INTO runs (run_id, service_id, service, client_id, inputs, input_hash, payout_count, created_at, updated_at)
     SELECT '${fake}', service_id, service, client_id, inputs, 'forged', 2, created_at, updated_at
     FROM runs WHERE run_id = '${runId}'`;

const runOf = (fake: string) => `(SELECT id FROM runs WHERE run_id = '${fake}')`;

describe.each(STORES)('money controls where the pieces meet (%s)', (store) => {
  const withStore = storeEnv(store, { migrated: true });

  it('a forged retry left "in flight" does not carry a retry of a paid payout past the service check', async () => {
    const t = await setUp(withStore);
    const { svc, run, write } = t;
    const first = await run(send(write('november.csv', [HEADER, row(1), row(2)])));
    expect(first.code).toBe(0);
    const runId = runIdOf(first.stderr);
    const fake = 'f1f1f1f1f1f1f1f1';
    const hash = payoutHash({
      reference_id: 'ROW-1-R1',
      amount: '1.25',
      currency: 'EUR',
      recipient: 'r1@example.com',
    });
    // A later run, by hand: ROW-1 failed, and its retry ROW-1-R1 went out with no outcome.
    await forge(store, t, [
      FORGED_RUN(runId, fake),
      `INSERT INTO payouts (run, row, reference_id, file, line, location, amount, currency, recipient, description, hash, hash_version)
         SELECT ${runOf(fake)}, row, reference_id, file, line, location, amount, currency, recipient,
           description, hash, hash_version FROM payouts WHERE reference_id = 'ROW-1'`,
      `INSERT INTO payouts (run, row, reference_id, file, line, location, amount, currency, recipient, description, hash, hash_version, retry_of)
         SELECT ${runOf(fake)}, 99, 'ROW-1-R1', file, line, location, amount, currency, recipient,
           description, '${hash}', hash_version, 'ROW-1' FROM payouts WHERE reference_id = 'ROW-1' AND run = ${runOf(fake)}`,
      `INSERT INTO intents (run, row, state, req, sent_at, updated_at)
         SELECT run, row, 'in_flight', 1, '2026-11-25T09:00:00.000Z', '2026-11-25T09:00:00.000Z'
         FROM payouts WHERE run = ${runOf(fake)}`,
      `INSERT INTO results (run, row, req, status, message, at)
         SELECT run, row, 1, 'failed', 'Account closed', '2026-11-25T09:00:01.000Z'
         FROM payouts WHERE run = ${runOf(fake)} AND reference_id = 'ROW-1'`,
    ]);
    const creates = svc.creates;
    const retry = write('retry.csv', [RETRY_HEADER, row(1, 'ROW-1-R1')]);
    const sent = await run(send(retry));
    expect(svc.posts.get('ROW-1-R1'), sent.stderr).toBeUndefined();
    expect(sent.code, sent.stderr).toBe(2);
    expect(sent.stderr).toContain('which the service holds as "success"');
    expect(svc.creates).toBe(creates);
    expect(svc.appliedTwice()).toEqual([]);
    expect(peoplePaidTwice(svc)).toEqual([]);
  });

  it('a later forged row of a paid retry, unlinked, does not free its original for another retry', async () => {
    const t = await setUp(withStore, failsThese(new Set(['ROW-2'])));
    const { svc, run, write } = t;
    expect((await run(send(write('november.csv', [HEADER, row(1), row(2)])))).code).toBe(4);
    const retry = await run(send(write('retry.csv', [RETRY_HEADER, row(2, 'ROW-2-R1')])));
    expect(retry.code, retry.stderr).toBe(0);
    const runId = runIdOf(retry.stderr);
    const fake = 'f2f2f2f2f2f2f2f2';
    // A later run, by hand, holding the paid retry's reference with no link and a failure.
    await forge(store, t, [
      FORGED_RUN(runId, fake),
      `INSERT INTO payouts (run, row, reference_id, file, line, location, amount, currency, recipient, description, hash, hash_version)
         SELECT ${runOf(fake)}, row, reference_id, file, line, location, amount, currency, recipient,
           description, hash, hash_version FROM payouts WHERE reference_id = 'ROW-2-R1'`,
      `INSERT INTO intents (run, row, state, req, sent_at, updated_at)
         SELECT run, row, 'in_flight', 1, '2026-11-25T09:00:00.000Z', '2026-11-25T09:00:00.000Z'
         FROM payouts WHERE run = ${runOf(fake)}`,
      `INSERT INTO results (run, row, req, status, message, at)
         SELECT run, row, 1, 'failed', 'Account closed', '2026-11-25T09:00:01.000Z'
         FROM payouts WHERE run = ${runOf(fake)}`,
    ]);
    const creates = svc.creates;
    const again = write('again.csv', [RETRY_HEADER, row(2, 'ROW-2-R2')]);
    const sent = await run(send(again));
    expect(svc.posts.get('ROW-2-R2'), sent.stderr).toBeUndefined();
    expect(sent.code, sent.stderr).toBe(2);
    expect(sent.stderr).toContain('already retried as "ROW-2-R1"');
    expect(svc.creates).toBe(creates);
    expect(svc.appliedTwice()).toEqual([]);
    expect(peoplePaidTwice(svc)).toEqual([]);
  });

  it('the service check of a retry speaks --json: 2 with its problems, 7 with the references', async () => {
    const t = await setUp(withStore, failsThese(new Set(['ROW-2'])));
    const { svc, run, write } = t;
    expect((await run(send(write('november.csv', [HEADER, row(1), row(2)])))).code).toBe(4);
    svc.preload(
      { reference_id: 'ROW-3', amount: 1.25, currency: 'EUR', recipient: 'r3@example.com' },
      'pending',
    );
    const pending = await run(
      send(write('pending.csv', [RETRY_HEADER, row(3, 'ROW-3-R1')]), '--json'),
    );
    expect(pending.code, pending.stdout).toBe(2);
    const doc = JSON.parse(pending.stdout) as {
      error: { problems?: Array<{ field: string; value: string; message: string }> };
    };
    expect(doc.error.problems).toEqual([
      expect.objectContaining({ field: 'new_reference_id', value: 'ROW-3-R1' }),
    ]);
    svc.onGet = (ref, res) => {
      if (ref !== 'ROW-2') return false;
      sendJson(res, 503, { success: false, message: ['Service unavailable'] });
      return true;
    };
    const down = await run(send(write('retry.csv', [RETRY_HEADER, row(2, 'ROW-2-R1')]), '--json'));
    expect(down.code, down.stdout).toBe(7);
    // Nothing of this run is in doubt: the original's lookup went unanswered, nothing was sent.
    const unknown = JSON.parse(down.stdout) as {
      outcome_unknown: string[];
      error: { message: string };
    };
    expect(unknown.outcome_unknown).toEqual([]);
    expect(unknown.error.message).toContain(
      'could not look up reference_id "ROW-2" at the service',
    );
    expect(svc.posts.get('ROW-2-R1')).toBeUndefined();
    expect(svc.posts.get('ROW-3-R1')).toBeUndefined();
  });

  it('a month of retries across both spellings of the service: every person paid once', async () => {
    const t = await setUp(withStore, failsThese(new Set(['ROW-2', 'ROW-3', 'ROW-3-R1'])));
    const { svc, run, write } = t;
    const loopback = { PAYOUTS_BASE_URL: svc.url };
    const localhost = { PAYOUTS_BASE_URL: `${svc.url.replace('127.0.0.1', 'localhost')}/` };
    const nov = write('november.csv', [HEADER, row(1), row(2), row(3), row(4)]);
    const first = await run(send(nov, '--json'), loopback);
    expect(first.code, first.stderr).toBe(4);
    // The whole new_reference_id column filled down: the paid rows are refused, nothing sent.
    const creates = svc.creates;
    const filled = write('filled.csv', [
      RETRY_HEADER,
      ...[1, 2, 3, 4].map((n) => row(n, `ROW-${n}-R1`)),
    ]);
    const refused = await run(send(filled, '--json'), localhost);
    expect(refused.code, refused.stdout).toBe(2);
    expect(refused.stdout).toContain('retries reference_id \\"ROW-1\\", which was paid');
    expect(refused.stdout).toContain('retries reference_id \\"ROW-4\\", which was paid');
    expect(svc.creates).toBe(creates);
    // The failed two retried at the other spelling: ROW-3-R1 fails again.
    const retry = write('retry.csv', [RETRY_HEADER, row(2, 'ROW-2-R1'), row(3, 'ROW-3-R1')]);
    const retried = await run(send(retry, '--json'), localhost);
    expect(retried.code, retried.stdout).toBe(4);
    expect(svc.posts.get('ROW-2-R1')).toBe(1);
    // A new reference another month's payout holds, and the original retried again: refused.
    const reuse = write('reuse.csv', [RETRY_HEADER, row(3, 'ROW-1')]);
    const reused = await run(send(reuse, '--json'), loopback);
    expect(reused.code, reused.stdout).toBe(2);
    const again = write('again.csv', [RETRY_HEADER, row(3, 'ROW-3-R2')]);
    const twice = await run(send(again, '--json'), loopback);
    expect(twice.code, twice.stdout).toBe(2);
    expect(twice.stdout).toContain('already retried as \\"ROW-3-R1\\"');
    // The retry of the retry, at the first spelling: paid once.
    const second = write('second.csv', [
      'reference_id,new_reference_id,amount,currency,recipient,description',
      'ROW-3-R1,ROW-3-R2,1.25,EUR,r3@example.com,November 3',
    ]);
    const paid = await run(send(second, '--json'), loopback);
    expect(paid.code, paid.stdout).toBe(0);
    expect(svc.posts.get('ROW-3-R2')).toBe(1);
    // The original file again, at either spelling: nothing is sent, exit 0.
    for (const at of [localhost, loopback]) {
      const creates = svc.creates;
      const resent = await run(send(nov, '--json'), at);
      expect(resent.code, resent.stdout).toBe(0);
      expect(svc.creates).toBe(creates);
    }
    const status = await run(['status', 'ROW-3', '--json'], localhost);
    expect(status.stdout).toContain('ROW-3-R2');
    expect(svc.appliedTwice()).toEqual([]);
    expect(peoplePaidTwice(svc)).toEqual([]);
  });
});

describe('an approved retry, where the spellings of the service meet', () => {
  it('is sent once, by its files or --approved, at either spelling; 9 and 10 in --json', async () => {
    const admin = await recycledDatabase();
    const svc = await fixture.start(failsThese(new Set(['ROW-2'])));
    const home = fixture.home();
    const loopback = svc.url;
    const localhost = `${svc.url.replace('127.0.0.1', 'localhost')}/`;
    const run = (url: string, base: string, args: string[]) =>
      runMain(args, {
        env: { ...svc.env(home.env), PAYOUTS_STATE_URL: url, PAYOUTS_BASE_URL: base },
        clock: new FakeClock(),
      });
    const write = (name: string, lines: string[]) => {
      const path = join(home.dir, name);
      writeFileSync(path, `${lines.join('\n')}\n`);
      return path;
    };
    const nov = write('november.csv', [HEADER, row(1), row(2)]);
    expect((await run(admin, loopback, send(nov))).code).toBe(4);
    expect((await run(admin, localhost, ['approvals', 'require'])).code).toBe(0);
    const { ana, bob } = await teamRoles(admin);
    const retry = write('retry.csv', [RETRY_HEADER, row(2, 'ROW-2-R1')]);
    const prepared = await run(ana, loopback, ['send', retry, '--prepare', '--json']);
    expect(prepared.code, prepared.stderr).toBe(0);
    const prep = (JSON.parse(prepared.stdout) as { prepared_run_id: string }).prepared_run_id;
    expect(prep).toMatch(/^p[0-9a-f]{15}$/);
    const waiting = await run(ana, localhost, send(retry, '--json'));
    expect(waiting.code, waiting.stdout).toBe(9);
    expect(svc.posts.get('ROW-2-R1')).toBeUndefined();
    expect((await run(bob, localhost, ['approve', prep, '--yes'])).code).toBe(0);
    // The files, at the other spelling than the one prepared: the approved retry goes once.
    const sent = await run(ana, localhost, send(retry, '--json'));
    expect(sent.code, sent.stdout).toBe(0);
    expect(svc.posts.get('ROW-2-R1')).toBe(1);
    const creates = svc.creates;
    // --approved afterwards, at either spelling: nothing more moves.
    for (const base of [loopback, localhost]) {
      const again = await run(bob, base, ['send', '--approved', prep, '--yes', '--json']);
      expect(again.code, again.stdout).toBe(0);
      expect(svc.creates).toBe(creates);
    }
    // A second retry of the paid retry, prepared and rejected: 10, nothing sent.
    const second = write('second.csv', [
      RETRY_HEADER,
      'ROW-2-R1,ROW-2-R2,1.25,EUR,r2@example.com,November 2',
    ]);
    const refused = await run(ana, loopback, ['send', second, '--prepare', '--json']);
    expect(refused.code, refused.stdout).toBe(2);
    const fresh = write('december.csv', [HEADER, 'DEC-1,2.50,EUR,d1@example.com,December 1']);
    const dec = await run(ana, localhost, ['send', fresh, '--prepare', '--json']);
    const decPrep = (JSON.parse(dec.stdout) as { prepared_run_id: string }).prepared_run_id;
    const no = ['approve', decPrep, '--reject', '--reason', 'wrong month', '--yes'];
    expect((await run(bob, loopback, no)).code).toBe(0);
    const rejected = await run(ana, loopback, send(fresh, '--json'));
    expect(rejected.code, rejected.stdout).toBe(10);
    expect(svc.creates).toBe(creates);
    const status = await run(ana, localhost, ['status', 'ROW-2', '--json']);
    expect(status.stdout).toContain('ROW-2-R1');
    expect(svc.appliedTwice()).toEqual([]);
    expect(peoplePaidTwice(svc)).toEqual([]);
  });
});

describe('the history guards against an insider with temporary tables', () => {
  it('a temp results, runs or payouts table does not free an intent with a result', async () => {
    const admin = await recycledDatabase();
    const schema = schemaOf(admin);
    const svc = await fixture.start();
    const home = fixture.home();
    const env = { ...svc.env(home.env), PAYOUTS_STATE_URL: admin };
    const file = join(home.dir, 'november.csv');
    writeFileSync(file, `${[HEADER, row(1), row(2)].join('\n')}\n`);
    expect((await runMain(send(file), { env, clock: new FakeClock() })).code).toBe(0);
    const { ana } = await teamRoles(admin);
    const c = new pg.Client({ connectionString: ana });
    await c.connect();
    const tries: string[] = [];
    try {
      for (const table of ['results', 'runs', 'payouts']) {
        await c.query(`CREATE TEMP TABLE ${table} AS SELECT * FROM ${schema}.${table} WHERE false`);
      }
      // Unqualified, the session's own empty tables come first for the person's statements.
      for (const s of [
        `UPDATE ${schema}.intents SET state = 'free'`,
        `DELETE FROM ${schema}.results`,
        `UPDATE ${schema}.results SET status = 'failed'`,
        `UPDATE ${schema}.runs SET service_id = 'elsewhere'`,
      ]) {
        tries.push(
          await c.query(s).then(
            () => `${s}: accepted`,
            (e: Error) => e.message,
          ),
        );
      }
    } finally {
      await c.end();
    }
    expect(tries).toEqual([
      expect.stringMatching(/^payouts: the intent of run \d+, row \d+ is history/),
      // docs/approvals.md grants no DELETE; a broader grant meets the trigger.
      expect.stringMatching(/^permission denied for table results|^payouts: results rows are/),
      expect.stringMatching(
        /^payouts: the result of run \d+, row \d+ \(success\) is never changed/,
      ),
      expect.stringMatching(/^payouts: run [0-9a-f]{16} of the history changes only its times/),
    ]);
    // The same file again sends nothing.
    const creates = svc.creates;
    expect((await runMain(send(file), { env, clock: new FakeClock() })).code).toBe(0);
    expect(svc.creates).toBe(creates);
    expect(svc.appliedTwice()).toEqual([]);
  });
});

type SqlRow = {
  reference_id: string;
  amount: string;
  currency: string;
  recipient: string;
  description: null;
  retry_of?: string;
};

/**
 * A prepared run written as psql would, by a person's role, with its content hash made right
 * for the service's identity: what an insider can record without payouts. Its bound.
 */
async function writePrepared(url: string, prepId: string, service: string, rows: SqlRow[]) {
  const hashed = rows.map((r) => ({ ...r, hash: approvalHash(r) }));
  const bound = {
    service: service.replace('127.0.0.1', 'localhost').replace(/\/$/, ''),
    batch_reference: null,
    webhook_url: null,
  };
  const totals = { EUR: { count: rows.length, total: '0' } };
  totals.EUR.total = rows.reduce((t, r) => t + Number(r.amount), 0).toFixed(2);
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query('BEGIN');
    await c.query(
      `INSERT INTO prepared_runs (prep_id, service_id, service, inputs, content_hash,
         payout_count, totals, prepared_by, created_at, expires_at)
       VALUES ($1, 'x', $2, '["dec.csv"]', $3, $4, $5, '', '', '')`,
      [prepId, service, contentHash(hashed, bound), rows.length, JSON.stringify(totals)],
    );
    for (const [i, r] of hashed.entries()) {
      await c.query(
        `INSERT INTO prepared_payouts (prep, row, reference_id, amount, currency, recipient, description, hash, retry_of)
         SELECT id, $1, $2, $3, $4, $5, NULL, $6, $7 FROM prepared_runs WHERE prep_id = $8`,
        [i, r.reference_id, r.amount, r.currency, r.recipient, r.hash, r.retry_of ?? null, prepId],
      );
    }
    await c.query('COMMIT');
  } finally {
    await c.end();
  }
  return bound;
}

describe('a prepared run written by SQL under the other spelling of its service', () => {
  it('needs the approvers the rule of that service asks, in the client and the database', async () => {
    const admin = await recycledDatabase();
    const svc = await fixture.start();
    const home = fixture.home();
    const localhost = `${svc.url.replace('127.0.0.1', 'localhost')}/`;
    const run = (url: string, args: string[]) =>
      runMain(args, {
        env: { ...svc.env(home.env), PAYOUTS_STATE_URL: url, PAYOUTS_BASE_URL: localhost },
        clock: new FakeClock(),
      });
    expect((await run(admin, ['approvals', 'require', '--approvers', '2'])).code).toBe(0);
    const { ana, bob } = await teamRoles(admin);
    // Ana writes her run as psql would, spelling the service 127.0.0.1 (the rule's is localhost).
    const rows = [1, 2, 3].map((n) => ({
      reference_id: `DEC-${n}`,
      amount: '100.00',
      currency: 'EUR',
      recipient: `m${n}@evil.example`,
      description: null,
    }));
    const bound = await writePrepared(ana, 'p00000000000abc', svc.url, rows);
    // The database found no rule under that text: it would count one approver and 7 days.
    const approved = await run(bob, ['approve', 'p00000000000abc', '--yes']);
    expect(approved.code, approved.stderr).toBe(2);
    expect(approved.stderr).toContain(
      `run p00000000000abc says the service "${svc.url}", not as payouts records ${bound.service}: it was not recorded by payouts`,
    );
    // Bob approves by SQL instead: the database counts 1 of 1, the send still refuses.
    const c2 = new pg.Client({ connectionString: bob });
    await c2.connect();
    await c2.query(
      `INSERT INTO approvals (prep, decision, by_role, at)
       SELECT id, 'approved', '', '' FROM prepared_runs WHERE prep_id = 'p00000000000abc'`,
    );
    await c2.end();
    const creates = svc.creates;
    const sent = await run(ana, ['send', '--approved', 'p00000000000abc', '--yes', '--json']);
    expect(sent.code, sent.stdout).toBe(2);
    expect(sent.stdout).toContain('it was not recorded by payouts, and is not sent');
    expect(svc.creates).toBe(creates);
  });
});

describe('a prepared retry written by SQL', () => {
  it('of a payout that was paid: approved, still refused at the send, nothing sent', async () => {
    const admin = await recycledDatabase();
    const svc = await fixture.start();
    const home = fixture.home();
    const run = (url: string, args: string[]) =>
      runMain(args, {
        env: { ...svc.env(home.env), PAYOUTS_STATE_URL: url },
        clock: new FakeClock(),
      });
    const file = join(home.dir, 'november.csv');
    writeFileSync(file, `${[HEADER, row(1)].join('\n')}\n`);
    expect((await run(admin, send(file))).code).toBe(0);
    expect((await run(admin, ['approvals', 'require'])).code).toBe(0);
    const { ana, bob } = await teamRoles(admin);
    await writePrepared(ana, 'p00000000000abd', svc.url.replace('127.0.0.1', 'localhost'), [
      {
        reference_id: 'ROW-1-R9',
        retry_of: 'ROW-1',
        amount: '1.25',
        currency: 'EUR',
        recipient: 'r1@example.com',
        description: null,
      },
    ]);
    const shown = await run(bob, ['runs', 'show', 'p00000000000abd']);
    expect(shown.stdout).toMatch(/ROW-1-R9\t.*retries ROW-1/);
    expect((await run(bob, ['approve', 'p00000000000abd', '--yes'])).code).toBe(0);
    const creates = svc.creates;
    const sent = await run(ana, ['send', '--approved', 'p00000000000abd', '--yes', '--json']);
    expect(sent.code, sent.stdout).toBe(2);
    expect(sent.stdout).toContain('retries reference_id \\"ROW-1\\", which was paid');
    expect(svc.creates).toBe(creates);
    expect(svc.appliedTwice()).toEqual([]);
    expect(svc.posts.get('ROW-1-R9')).toBeUndefined();
  });
});

describe('an approval that expires while its send waits for the lock', () => {
  it('sends nothing: the database refuses the sent event, exit 11', async () => {
    const admin = await recycledDatabase();
    const svc = await fixture.start();
    const home = fixture.home();
    const env = (url: string) => ({ ...svc.env(home.env), PAYOUTS_STATE_URL: url });
    const run = (url: string, args: string[], clock = new FakeClock()) =>
      runMain(args, { env: env(url), clock });
    expect((await run(admin, ['approvals', 'require'])).code).toBe(0);
    const { ana, bob } = await teamRoles(admin);
    const file = join(home.dir, 'december.csv');
    writeFileSync(file, `${[HEADER, row(1), row(2)].join('\n')}\n`);
    const prepared = await run(ana, ['send', file, '--prepare', '--json']);
    const prep = (JSON.parse(prepared.stdout) as { prepared_run_id: string }).prepared_run_id;
    expect((await run(bob, ['approve', prep, '--yes'])).code).toBe(0);
    const other = await PgHistory.open(admin);
    const lock = await other.lockService(serviceKeyOf(svc.url), {
      host: 'laptop-2.invalid',
      user: 'carol',
      pid: 4242,
      started_at: '2026-11-24T11:58:00.000Z',
      command: 'payouts send other.csv',
    });
    // While the send waits, the approval's time runs out (moved by the tables' owner).
    const clock = new FakeClock();
    const sleep = clock.sleep.bind(clock);
    let moved = false;
    clock.sleep = async (ms, signal) => {
      if (!moved) {
        moved = true;
        const c = new pg.Client({ connectionString: admin });
        await c.connect();
        await c.query('ALTER TABLE prepared_runs DISABLE TRIGGER prepared_runs_append_only');
        await c.query(
          `UPDATE prepared_runs SET expires_at = '2000-01-01T00:00:00.000Z' WHERE prep_id = $1`,
          [prep],
        );
        await c.query('ALTER TABLE prepared_runs ENABLE TRIGGER prepared_runs_append_only');
        await c.end();
        await lock.release();
      }
      return sleep(ms, signal);
    };
    try {
      const sent = await run(ana, ['send', file, '--yes', '--wait', '--json'], clock);
      expect(svc.creates, sent.stdout).toBe(0);
      expect(moved).toBe(true);
      expect(sent.code, sent.stdout).toBe(11);
      const doc = JSON.parse(sent.stdout) as {
        error: { message: string; approval: { state: string; prepared_run_id: string } };
      };
      expect(doc.error.approval).toMatchObject({ state: 'expired', prepared_run_id: prep });
      expect(doc.error.message).toContain('expired at 2000-01-01 00:00 UTC before it was sent');
    } finally {
      await other.close();
    }
  });
});

describe('two retries of one payout, decided at once', () => {
  it('the one that waited for the lock sees the other and sends nothing', async () => {
    const admin = await recycledDatabase();
    const svc = await fixture.start(failsThese(new Set(['ROW-2'])));
    const home = fixture.home();
    const run = (args: string[], clock = new FakeClock()) =>
      runMain(args, { env: { ...svc.env(home.env), PAYOUTS_STATE_URL: admin }, clock });
    const write = (name: string, lines: string[]) => {
      const path = join(home.dir, name);
      writeFileSync(path, `${lines.join('\n')}\n`);
      return path;
    };
    expect((await run(send(write('november.csv', [HEADER, row(1), row(2)])))).code).toBe(4);
    const mine = write('mine.csv', [RETRY_HEADER, row(2, 'ROW-2-R1')]);
    const theirs = write('theirs.csv', [RETRY_HEADER, row(2, 'ROW-2-R2')]);
    const other = await PgHistory.open(admin);
    const lock = await other.lockService(serviceKeyOf(svc.url), {
      host: 'laptop-2.invalid',
      user: 'carol',
      pid: 4242,
      started_at: '2026-11-24T11:58:00.000Z',
      command: 'payouts send other.csv',
    });
    // Both decided (history and service both said ROW-2 failed) and wait, mine asked first:
    // mine goes first, theirs then reads the history again under the lock.
    const env = { ...svc.env(home.env), PAYOUTS_STATE_URL: admin };
    try {
      const mineRun = runQueued(['send', mine, '--yes', '--wait', '--chunk-size', '1'], { env });
      await mineRun.queued;
      const theirsRun = runQueued(['send', theirs, '--yes', '--wait', '--json'], { env });
      await theirsRun.queued;
      await lock.release();
      const first = await mineRun.done;
      const waited = await theirsRun.done;
      expect(first.code, first.stderr).toBe(0);
      expect(svc.posts.get('ROW-2-R1')).toBe(1);
      expect(waited.code, waited.stdout).toBe(2);
      expect(waited.stdout).toContain('already retried as \\"ROW-2-R1\\"');
      expect(svc.posts.get('ROW-2-R2')).toBeUndefined();
      expect(peoplePaidTwice(svc)).toEqual([]);
    } finally {
      await other.close();
    }
  });
});
