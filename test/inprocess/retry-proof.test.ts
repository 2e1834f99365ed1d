import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/state/index.js';
import { sendJson } from '../helpers/http-servers.js';
import { failsThese, ledgerPerTest } from '../helpers/ledger-service.js';
import { STORES, storeEnv, teamRoles } from '../helpers/pg.js';
import {
  HEADER,
  peoplePaidTwice,
  RETRY_HEADER,
  retrySetUp,
  row,
  runIdOf,
  sendArgs,
} from '../helpers/retry.js';

// A retry pays a payout under a new reference: it goes only on the service's word that the
// original failed, whatever the history says (a wrong history, or a `failed` result a person
// wrote into it). The loopback service has its duplicate checks off.

const fixture = ledgerPerTest();

/**
 * A later run, written by hand into the history, saying ROW-1 of run `runId` failed: what a
 * person with INSERT on the history can write (h39's "not done"), or a history simply wrong.
 */
const FORGED = (runId: string) => [
  `INSERT INTO runs (run_id, service_id, service, client_id, inputs, input_hash, payout_count, created_at, updated_at)
     SELECT 'f0f0f0f0f0f0f0f0', service_id, service, client_id, inputs, 'forged', 1, created_at, updated_at
     FROM runs WHERE run_id = '${runId}'`,
  `INSERT INTO payouts (run, row, reference_id, file, line, location, amount, currency, recipient, description, hash, hash_version)
     SELECT (SELECT id FROM runs WHERE run_id = 'f0f0f0f0f0f0f0f0'), row, reference_id, file, line,
       location, amount, currency, recipient, description, hash, hash_version
     FROM payouts WHERE reference_id = 'ROW-1'`,
  `INSERT INTO intents (run, row, state, req, sent_at, updated_at)
     SELECT run, row, 'in_flight', 1, '2026-11-25T09:00:00.000Z', '2026-11-25T09:00:00.000Z'
     FROM payouts WHERE run = (SELECT id FROM runs WHERE run_id = 'f0f0f0f0f0f0f0f0')`,
  `INSERT INTO results (run, row, req, status, message, at)
     SELECT run, row, 1, 'failed', 'Account closed', '2026-11-25T09:00:01.000Z'
     FROM payouts WHERE run = (SELECT id FROM runs WHERE run_id = 'f0f0f0f0f0f0f0f0')`,
];

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

describe.each(STORES)('a retry goes only on the service word (%s)', (store) => {
  const withStore = storeEnv(store, { migrated: true });

  it('refuses a retry of a payout the service holds as paid, though the history says failed', async () => {
    const { svc, home, env, run, write } = await retrySetUp(fixture, withStore);
    const file = write('november.csv', [HEADER, row(1), row(2)]);
    const first = await run(sendArgs(file));
    expect(first.code).toBe(0);
    const runId = runIdOf(first.stderr);
    if (store === 'postgres') {
      // An ordinary role, granted as docs/approvals.md says, writes the failure.
      const { ana } = await teamRoles(env.PAYOUTS_STATE_URL!);
      await asRole(ana, FORGED(runId));
    } else {
      const db = openDatabase(join(home.env.XDG_STATE_HOME!, 'payouts', 'state.db'));
      for (const s of FORGED(runId)) db.exec(s);
      db.close();
    }
    // The history now says ROW-1 failed: the chain alone would let the retry go.
    const creates = svc.creates;
    const retry = write('retry.csv', [RETRY_HEADER, row(1, 'ROW-1-R1')]);
    const refused = await run(sendArgs(retry));
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain(
      'retry.csv line 2: new_reference_id "ROW-1-R1": retries reference_id "ROW-1", which the service holds as "success" (transaction T-ROW-1): a new reference would pay it again; the history says failed (run f0f0f0f0f0f0f0f0), which is wrong',
    );
    expect(refused.stderr).toContain('nothing was sent');
    // A dry run asks the service only with --check-service, and then refuses alike.
    const dry = await run(['send', retry, '--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.stderr).toContain('Not looked up: a send first asks the service whether');
    const checked = await run(['send', retry, '--dry-run', '--check-service']);
    expect(checked.code).toBe(2);
    // Once `status` has read it, the history keeps the service's word: refused from it alone.
    expect((await run(['status', 'ROW-1'])).code).toBe(0);
    const kept = await run(sendArgs(retry));
    expect(kept.code).toBe(2);
    expect(kept.stderr).toContain('retries reference_id "ROW-1", which was paid (run ');
    expect(svc.creates).toBe(creates);
    expect(svc.posts.get('ROW-1-R1')).toBeUndefined();
    expect(peoplePaidTwice(svc)).toEqual([]);
  });

  it('refuses a retry of a payout pending at the service, or one it holds no payout of', async () => {
    const { svc, run, write } = await retrySetUp(fixture, withStore);
    // A retry file from elsewhere: this history knows neither original.
    svc.preload(
      { reference_id: 'ROW-3', amount: 1.25, currency: 'EUR', recipient: 'r3@example.com' },
      'pending',
    );
    const retry = write('retry.csv', [RETRY_HEADER, row(3, 'ROW-3-R1'), row(4, 'ROW-4-R1')]);
    // This history never sent them: refused before any lookup, unless the person says so.
    const unseen = await run(sendArgs(retry));
    expect(unseen.code).toBe(2);
    expect(unseen.stderr).toContain('which this history never sent');
    expect(svc.gets).toBe(0);
    const refused = await run(sendArgs(retry, '--original-elsewhere'));
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      'retry.csv line 2: new_reference_id "ROW-3-R1": retries reference_id "ROW-3", which the service holds as "pending" (transaction T-ROW-3): not final, it may still be paid',
    );
    expect(refused.stderr).toContain(
      'retry.csv line 3: new_reference_id "ROW-4-R1": retries reference_id "ROW-4", which the service holds no payout of (the history does not know it): a retry goes only on the service\'s word that the original failed; check with `payouts status ROW-4`',
    );
    expect(svc.creates).toBe(0);
    // One lookup per retry row.
    expect(svc.gets).toBe(2);
  });

  it('sends a retry of a payout the service failed, once; unreachable, exit 7 and nothing sent', async () => {
    const { svc, run, write } = await retrySetUp(
      fixture,
      withStore,
      failsThese(new Set(['ROW-1', 'ROW-2'])),
    );
    const file = write('november.csv', [HEADER, row(1), row(2)]);
    expect((await run(sendArgs(file))).code).toBe(4);
    // The service does not answer lookups of ROW-2 (a 503 each time).
    svc.onGet = (ref, res) => {
      if (ref !== 'ROW-2') return false;
      sendJson(res, 503, { success: false, message: ['Service unavailable'] });
      return true;
    };
    const creates = svc.creates;
    const both = write('both.csv', [RETRY_HEADER, row(1, 'ROW-1-R1'), row(2, 'ROW-2-R1')]);
    const unreachable = await run(sendArgs(both));
    expect(unreachable.code, unreachable.stderr).toBe(7);
    expect(unreachable.stderr).toContain('could not look up reference_id "ROW-2" at the service');
    expect(unreachable.stderr).toContain('nothing was sent');
    expect(svc.creates).toBe(creates);
    const one = write('one.csv', [RETRY_HEADER, row(1, 'ROW-1-R1')]);
    const gets = svc.gets;
    const sent = await run(sendArgs(one));
    expect(sent.code, sent.stderr).toBe(0);
    expect(svc.gets - gets).toBe(1);
    expect(svc.posts.get('ROW-1-R1')).toBe(1);
    // The same file again: the retry was sent earlier, so nothing is looked up or sent.
    const again = await run(sendArgs(one));
    expect(again.code).toBe(0);
    expect(svc.posts.get('ROW-1-R1')).toBe(1);
    expect(svc.appliedTwice()).toEqual([]);
    expect(peoplePaidTwice(svc)).toEqual([]);
  });
});
