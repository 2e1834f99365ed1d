import { describe, expect, it } from 'vitest';
import { parseJsonStdout } from '../helpers/cli.js';
import { sendJson } from '../helpers/http-servers.js';
import { type CreatePolicy, ledgerPerTest, type Reply } from '../helpers/ledger-service.js';
import type { MainResult } from '../helpers/main.js';
import { STORES, storeEnv } from '../helpers/pg.js';
import { RETRY_HEADER, retrySetUp } from '../helpers/retry.js';

// One decision per payout (issue 46): for a history holding a payout of every kind (sent
// earlier, pending, in doubt, recorded under a rotated Client-Id, failed, failed and retried,
// new), `send --dry-run --check-service` says exactly what the send then does, in its counts
// and in its words, and the approver's screen says the same. The loopback service keeps no
// duplicate check of its own: what it is sent twice, it pays twice.

const fixture = ledgerPerTest();

const AMOUNTS: Record<string, string> = { SENT: '1.00', PEND: '2.00', DOUBT: '3.00', ROT: '4.00' };

/** A row of a retry file: `ref`, sent under `fresh` when given. */
function row(ref: string, fresh = ''): string {
  const original = ref.replace(/-R1$/, '');
  return `${ref},${fresh},${AMOUNTS[original] ?? '5.00'},EUR,${original.toLowerCase()}@ex.com,December`;
}

/** The per-payout results of one create request, each in `status`. */
function answeredAs(status: string, message?: string): Reply {
  return {
    heldAs: status,
    body: (results) => ({
      success: true,
      message: ['Payouts processed'],
      data: {
        success_count: status === 'failed' ? 0 : results.length,
        failed_count: status === 'failed' ? results.length : 0,
        results: results.map((x) => ({ ...x, status, ...(message ? { message } : {}) })),
      },
    }),
  };
}

/** PEND is pending, FAIL and RETRIED fail, DOUBT is applied and its answer lost; all else pays. */
const policy: CreatePolicy = (_n, posted) => {
  const ref = posted[0]?.reference_id ?? '';
  if (ref === 'PEND') return answeredAs('pending');
  if (ref === 'FAIL' || ref === 'RETRIED') return answeredAs('failed', 'Account closed');
  if (ref === 'DOUBT') return { cut: true };
  return {};
};

/** The summary's lines of a run, from `Payouts:` to `Webhook:`. */
function summaryOf(r: MainResult): string {
  const m = /^Payouts:[\s\S]*?^Webhook:.*$/m.exec(r.stderr);
  expect(m, r.stderr).not.toBeNull();
  return m![0];
}

/** The lines that name a row of the files. */
const rowLines = (r: MainResult) => r.stderr.split('\n').filter((l) => /\.csv line \d+:/.test(l));

interface Counted {
  payout_count: number;
}
interface DryDoc {
  sent_earlier: Counted;
  to_read_back: Counted;
  to_send: Counted & { request_count: number };
}
interface SentDoc {
  sent_earlier_count: number;
  found_at_service_count: number;
  results: Array<{ reference_id: string; status: string }>;
}
interface PreparedDoc {
  earlier: {
    sent_count: number;
    pending_count: number;
    failed_count: number;
    to_send_count: number;
  };
  payouts: Array<{ reference_id: string; attention: string[] }>;
}

describe.each(STORES)('one decision per payout (%s)', (store) => {
  const withStore = storeEnv(store, { migrated: true });

  /** A history with a payout of every kind, and its service. */
  async function history() {
    const { svc, run, write: writeLines } = await retrySetUp(fixture, withStore, policy);
    const write = (name: string, lines: string[]) => writeLines(name, [RETRY_HEADER, ...lines]);
    const one = ['--yes', '--chunk-size', '1', '--concurrency', '1'];
    // ROT was sent under the Client-Id before the key was rotated.
    const rot = await run(['send', write('old.csv', [row('ROT')]), ...one], {
      PAYOUTS_CLIENT_ID: 'client-0',
    });
    expect(rot.code, rot.stderr).toBe(0);
    // DOUBT's answer is lost and it cannot be read back: it stays in doubt (exit 7).
    svc.onGet = (ref, res) => {
      if (ref !== 'DOUBT') return false;
      sendJson(res, 503, { success: false, message: ['Service unavailable'] });
      return true;
    };
    const nov = ['SENT', 'PEND', 'FAIL', 'RETRIED', 'DOUBT'].map((r) => row(r));
    expect((await run(['send', write('nov.csv', nov), ...one])).code).toBe(7);
    svc.onGet = undefined;
    // RETRIED failed, and its retry paid it.
    const retried = await run(['send', write('retry.csv', [row('RETRIED', 'RETRIED-R1')]), ...one]);
    expect(retried.code, retried.stderr).toBe(0);
    return { svc, run, write };
  }

  const KINDS = ['SENT', 'PEND', 'DOUBT', 'ROT', 'RETRIED'];

  it('a row the send refuses is refused by the dry run alike, in the same words', async () => {
    const { svc, run, write } = await history();
    const file = write('dec.csv', [...KINDS.map((r) => row(r)), row('FAIL'), row('NEW-1')]);
    const creates = svc.creates;
    const dry = await run(['send', file, '--dry-run', '--check-service']);
    const sent = await run(['send', file, '--yes', '--check-service']);
    expect([dry.code, sent.code], dry.stderr).toEqual([2, 2]);
    expect(rowLines(dry)).toEqual(rowLines(sent));
    if (store === 'postgres') {
      // --prepare refuses it as well: no approver is asked about a run the send refuses.
      const prepared = await run(['send', file, '--prepare']);
      expect(prepared.code).toBe(2);
      expect(rowLines(prepared)).toEqual(rowLines(sent));
    }
    expect(rowLines(sent).join('\n')).toMatch(
      // The file has a new_reference_id column: the row's own is to fill in (issue 49).
      /line 7: reference_id "FAIL": already failed at the service \(sent by run [0-9a-f]{16} on .*\): fill in its new_reference_id$/,
    );
    expect(svc.creates).toBe(creates);
  });

  it('says what the send sends, in its counts and words; the screen counts the same', async () => {
    const { svc, run, write } = await history();
    const lines = [...KINDS.map((r) => row(r)), row('FAIL', 'FAIL-R1'), row('NEW-1'), row('NEW-2')];
    const file = write('dec.csv', lines);
    const args = ['send', file, '--check-service'];
    const dry = await run([...args, '--dry-run']);
    expect(dry.code, dry.stderr).toBe(0);
    // After the rotation the service holds ROT, which the history recorded under client-0.
    expect(dry.stderr).toContain(
      'The service holds 1 of the 4 payouts looked up: ROT (success). A send counts them as sent earlier.',
    );
    const doc = parseJsonStdout<DryDoc>(await run([...args, '--dry-run', '--json']));
    const counts = [doc.sent_earlier, doc.to_read_back, doc.to_send].map((c) => c.payout_count);
    expect(counts).toEqual([4, 1, 3]);
    let screen: PreparedDoc | undefined;
    if (store === 'postgres') {
      const prepared = await run(['send', file, '--prepare', '--json']);
      expect(prepared.code, prepared.stderr).toBe(0);
      screen = parseJsonStdout<PreparedDoc>(prepared);
    }
    const before = new Map(svc.posts);
    const sent = await run([...args, '--yes']);
    // Exit 5: PEND, sent earlier, is still pending.
    expect(sent.code, sent.stderr).toBe(5);
    // The same summary, word for word, before the send as in the dry run.
    expect(summaryOf(sent)).toBe(summaryOf(dry));
    const posted = [...svc.posts].filter(([ref, n]) => n > (before.get(ref) ?? 0));
    expect(posted.map(([ref]) => ref).sort()).toEqual(['FAIL-R1', 'NEW-1', 'NEW-2']);
    expect(posted.length).toBe(doc.to_send.payout_count);
    expect(svc.appliedTwice()).toEqual([]);
    const again = parseJsonStdout<SentDoc>(await run([...args, '--yes', '--json']));
    // Read back, DOUBT was found: sent earlier with the four the dry run counted so.
    expect(again.sent_earlier_count).toBe(8);
    if (screen) {
      const { sent_count, pending_count, failed_count, to_send_count } = screen.earlier;
      expect(to_send_count).toBe(doc.to_send.payout_count);
      expect(sent_count + pending_count).toBe(
        doc.sent_earlier.payout_count + doc.to_read_back.payout_count,
      );
      expect(failed_count).toBe(0);
      const retry = screen.payouts.find((p) => p.reference_id === 'FAIL-R1');
      expect(retry?.attention.join('; ')).toContain('retries FAIL, which failed');
      expect(retry?.attention.join('; ')).toContain('this retry sends it');
    }
  });
});
