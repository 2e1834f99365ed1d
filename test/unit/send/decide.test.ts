import { describe, expect, it } from 'vitest';
import { decide, MODES, type Mode } from '../../../src/core/send/decide.js';
import {
  asksOf,
  type Decision,
  type Facts,
  type Fate,
  freshSplit,
  moves,
  sendsNothing,
  splitOf,
  stopping,
} from '../../../src/core/send/fates.js';
import type { PriorRow } from '../../../src/domain/history.js';
import { CurrencyTotals } from '../../../src/money/amount.js';
import { CurrencyTable } from '../../../src/money/currencies.js';
import { payoutHash } from '../../../src/state/index.js';
import { answers, failing, found, held, link, missing, payout, retry } from './history.js';

// The one decision per payout, hit directly: each row of one history, in each mode. What
// differs between modes is MODES; the rest of the decision is the same for every caller.

/** One history, a row of each kind; REFS[row] is the reference each staged row is sent under. */
const REFS = [
  'NEW',
  'SENT',
  'PEND',
  'DOUBT',
  'ROT',
  'FAIL',
  'RETRIED',
  'F1-R1',
  'P1-R1',
  'OTHER',
  'E1-R1',
];
const HISTORY: PriorRow[] = [
  held(1, 'SENT'),
  held(2, 'PEND', { status: 'pending' }),
  held(3, 'DOUBT', { state: 'in_flight', status: null, transaction_id: null }),
  // Recorded by a run under the Client-Id before a key rotation.
  held(4, 'ROT', { client_id: 'key-0', run_id: 'run-old' }),
  held(5, 'FAIL', { status: 'failed', message: 'Account closed' }),
  // Failed, then retried as RETRIED-R1, which was paid.
  held(6, 'RETRIED', { status: 'failed' }),
  link(6, 'RETRIED', 'RETRIED-R1', { run_id: 'run-b', retry_of: 'RETRIED' }),
  // The originals of two retry rows: F1 failed, P1 was paid.
  link(7, 'F1-R1', 'F1', { status: 'failed' }),
  link(8, 'P1-R1', 'P1'),
  // Sent earlier as another payout (another amount).
  { ...held(9, 'OTHER'), hash: payoutHash(payout('OTHER', '9.99')) },
];
const FACTS: Facts = {
  held: HISTORY,
  // E1-R1 retries E1, which this history never sent (a retry file from another machine).
  retries: [retry(7, 'F1-R1', 'F1'), retry(8, 'P1-R1', 'P1'), retry(10, 'E1-R1', 'E1')],
  staged: REFS.map((ref, row) => ({ row, payout: payout(ref) })),
  clientId: 'key-1',
  runId: 'this-run',
};

/** A fate in a few words, for the table. */
function word(f: Fate | undefined): string {
  if (!f) return 'send';
  switch (f.kind) {
    case 'send':
      return f.unasked ? `send, ${f.unasked} unasked` : 'send';
    case 'sent-earlier': {
      // A payout failed earlier keeps its own status; its retry is named beside it.
      const r = f.earlier.outcome.retried_as;
      const as = r ? `, as ${r.reference_id}: ${r.status}` : '';
      return `sent earlier (${f.how}, ${f.earlier.outcome.status}${as})`;
    }
    case 'read-back':
      return 'read back';
    case 'look-up':
      return `look up ${f.asks.map((a) => `${a.ref} (${a.why})`).join(', ')}`;
    default:
      return `refused: ${f.refusal.kind}`;
  }
}

const words = (d: Decision) => REFS.map((_, row) => word(d.fates.get(row)));

/** What the modes that ask the service nothing decide: the dry run, --prepare, the screen alike. */
const FROM_HISTORY = [
  'send',
  'sent earlier (history, success)',
  'sent earlier (history, pending)',
  'read back',
  'sent earlier (history, success)',
  'refused: failed-earlier',
  'sent earlier (retried, failed, as RETRIED-R1: success)',
  'send, F1 unasked',
  'refused: retry',
  'refused: held-other',
  'refused: original-elsewhere',
];

/** What each mode decides of each row, before the service answers anything. */
const TABLE: Record<Mode, string[]> = {
  'dry-run': FROM_HISTORY,
  prepare: FROM_HISTORY,
  screen: FROM_HISTORY,
  send: [
    'look up NEW (not-in-history)',
    'sent earlier (history, success)',
    'sent earlier (history, pending)',
    'read back',
    'look up ROT (other-client)',
    'refused: failed-earlier',
    'sent earlier (retried, failed, as RETRIED-R1: success)',
    'look up F1-R1 (not-in-history), F1 (original)',
    'refused: retry',
    'refused: held-other',
    'refused: original-elsewhere',
  ],
  reconcile: [
    'send',
    'sent earlier (history, success)',
    'look up PEND (not-final)',
    'look up DOUBT (not-final)',
    'look up ROT (other-client)',
    'refused: failed-earlier',
    'sent earlier (retried, failed, as RETRIED-R1: success)',
    'send, F1 unasked',
    'refused: retry',
    'refused: held-other',
    'refused: original-elsewhere',
  ],
};

describe('decide: each row of one history, mode by mode', () => {
  it.each(Object.keys(TABLE) as Mode[])('%s', (mode) => {
    expect(words(decide(FACTS, mode))).toEqual(TABLE[mode]);
  });

  it('stops a run on the first kind of refusal its mode stops on, told in the others', () => {
    const kinds = (mode: Mode) => stopping(decide(FACTS, mode)).map((r) => r.kind);
    expect(kinds('send')).toEqual(['held-other']);
    expect(kinds('dry-run')).toEqual(['held-other']);
    expect(kinds('screen')).toEqual([]);
    expect(kinds('reconcile')).toEqual([]);
    // Without the payout held as another, a retry row is the next to stop it; then failed earlier.
    const rest = { ...FACTS, held: HISTORY.filter((h) => h.row !== 9) };
    expect(stopping(decide(rest, 'prepare')).map((r) => r.kind)).toEqual(['retry']);
    const noP1 = { ...rest, retries: rest.retries.filter((r) => r.row !== 8) };
    // A retry whose original this history never sent is refused from the history alone too.
    expect(stopping(decide(noP1, 'prepare')).map((r) => r.kind)).toEqual(['original-elsewhere']);
    expect(stopping(decide(noP1, 'dry-run')).map((r) => r.kind)).toEqual(['original-elsewhere']);
    const noRetry = { ...noP1, retries: noP1.retries.filter((r) => r.row !== 10) };
    expect(stopping(decide(noRetry, 'prepare')).map((r) => r.kind)).toEqual(['failed-earlier']);
    // A dry run tells a payout failed earlier ("Failed earlier:") rather than stop on it.
    expect(stopping(decide(noRetry, 'dry-run'))).toEqual([]);
    expect(MODES['dry-run'].stops).not.toContain('failed-earlier');
  });

  it('lets a retry whose original this history never sent go with --original-elsewhere, asked', () => {
    const told = { ...FACTS, originalElsewhere: true };
    expect(word(decide(told, 'send').fates.get(10))).toBe(
      'look up E1-R1 (not-in-history), E1 (original)',
    );
    expect(word(decide(told, 'dry-run').fates.get(10))).toBe('send, E1 unasked');
    expect(decide(told, 'send').elsewhere.map((r) => r.reference_id)).toEqual(['E1-R1']);
    expect(decide(FACTS, 'send').elsewhere).toEqual([]);
    // A retry row sent earlier sends nothing: whatever its original, it is not refused.
    const sent = { ...FACTS, held: [...HISTORY, held(10, 'E1-R1', { retry_of: 'E1' })] };
    expect(word(decide(sent, 'send').fates.get(10))).toBe('sent earlier (history, success)');
  });

  it("takes this run's own failed payouts as its results (a resume), not as refused", () => {
    const own = { ...FACTS, runId: 'run-a' };
    expect(word(decide(own, 'send').fates.get(5))).toBe('sent earlier (history, failed)');
  });

  it('marks a payout in doubt that a run another process sends now is deciding', () => {
    const doubt = decide({ ...FACTS, live: new Set(['run-a']) }, 'send').fates.get(3);
    expect(doubt).toMatchObject({ kind: 'read-back', deciding: 'run-a' });
    expect(decide(FACTS, 'send').fates.get(3)).not.toHaveProperty('deciding');
  });

  it('asks every question once, in row order', () => {
    const asks = asksOf(decide(FACTS, 'send')).map((a) => `${a.row}:${a.ref}`);
    expect(asks).toEqual(['0:NEW', '4:ROT', '7:F1-R1', '7:F1']);
    // In the sandbox there is no Client-Id: what the history holds is taken as it is.
    const sandbox = { ...FACTS, clientId: undefined, staged: undefined };
    expect(asksOf(decide(sandbox, 'send')).map((a) => a.ref)).toEqual(['F1']);
  });
});

describe('decide: the service answers what the history left open', () => {
  const facts = { ...FACTS, held: HISTORY.filter((h) => ![5, 8, 9].includes(h.row)) };
  facts.retries = facts.retries.filter((r) => r.row !== 8 && r.row !== 10);

  it('found is sent earlier (the recording run kept), not found is sent', () => {
    const d = decide(
      facts,
      'send',
      answers(found('NEW'), found('ROT'), missing('FAIL'), missing('F1-R1'), found('F1', 'failed')),
    );
    expect(words(d).slice(0, 8)).toEqual([
      'sent earlier (service, success)',
      'sent earlier (history, success)',
      'sent earlier (history, pending)',
      'read back',
      'sent earlier (service, success)',
      'send',
      'sent earlier (retried, failed, as RETRIED-R1: success)',
      'send',
    ]);
    const rot = d.fates.get(4);
    expect(rot?.kind === 'sent-earlier' && rot.earlier.runId).toBe('run-old');
    const fresh = d.fates.get(0);
    expect(fresh?.kind === 'sent-earlier' && fresh.earlier.outcome.found_at_service).toBe(true);
    expect(stopping(d)).toEqual([]);
  });

  it('another payout, or no answer, refuses; a retry goes only on failed or canceled', () => {
    const other = found('NEW', 'success', 5);
    const d = decide(facts, 'send', answers(other, failing('ROT'), missing('F1-R1'), found('F1')));
    expect([0, 4, 7].map((row) => word(d.fates.get(row)))).toEqual([
      'refused: other-payout',
      'refused: unanswered',
      'refused: not-proved',
    ]);
    expect(stopping(d).map((r) => r.kind)).toEqual(['other-payout']);
    const unproved = decide(
      facts,
      'send',
      answers(missing('NEW'), missing('ROT'), missing('F1-R1'), failing('F1')),
    );
    expect(stopping(unproved).map((r) => r.kind)).toEqual(['unproved']);
    // Found failed at the service, a payout the history did not know is refused as failed earlier.
    const failedThere = decide(
      facts,
      'send',
      answers(found('NEW', 'failed'), missing('ROT'), found('F1-R1')),
    );
    expect(word(failedThere.fates.get(0))).toBe('refused: failed-earlier');
  });
});

describe('the folds over the fates', () => {
  const currencies = new CurrencyTable();
  const totals = new CurrencyTotals();
  for (let i = 0; i < REFS.length; i++) totals.add('EUR', 100n);
  const plan = { totals, requestCount: 1 };

  it('splits the files: sent earlier (failed too), read back, to look up, to send', () => {
    const rest = {
      ...FACTS,
      held: HISTORY.filter((h) => h.row !== 9),
      retries: [FACTS.retries[0]!],
    };
    const dry = splitOf(decide(rest, 'dry-run'), plan, currencies, 100);
    expect([
      dry.sentEarlier.count,
      dry.failedEarlier.count,
      dry.readBack.count,
      dry.toSend.count,
    ]).toEqual([5, 1, 1, 5]);
    expect(dry.retried).toEqual({ count: 1, paid: ['RETRIED-R1'], pending: [] });
    expect(dry.earlierRuns.map((r) => [r.runId, r.count])).toEqual([
      ['run-a', 3],
      ['run-old', 1],
      ['run-b', 1],
    ]);
    // Before the lookups, a send knows only that a payout the service may hold is to look up.
    const send = splitOf(decide(rest, 'send'), plan, currencies, 100);
    expect([
      send.sentEarlier.count,
      send.toLookUp.count,
      send.readBack.count,
      send.toSend.count,
    ]).toEqual([4, 6, 1, 0]);
    expect(moves(send)).toBe(true);
    expect(sendsNothing(send)).toBe(false);
  });

  it('a run whose only payouts the service may hold may send nothing: it does not move yet', () => {
    const one = new CurrencyTotals();
    one.add('EUR', 100n);
    const facts: Facts = {
      held: [held(0, 'ROT', { client_id: 'key-0' })],
      retries: [],
      clientId: 'key-1',
    };
    const split = splitOf(decide(facts, 'send'), { totals: one }, currencies, 100);
    expect([moves(split), sendsNothing(split)]).toEqual([false, false]);
    const answered = decide(facts, 'send', answers(found('ROT')));
    expect(sendsNothing(splitOf(answered, { totals: one }, currencies, 100))).toBe(true);
    expect(sendsNothing(freshSplit({ totals: one, requestCount: 1 }))).toBe(false);
  });
});
