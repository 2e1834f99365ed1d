import { describe, expect, it } from 'vitest';
import { decide } from '../../../src/core/send/decide.js';
import { asksOf, type Facts, splitOf, stopping } from '../../../src/core/send/fates.js';
import {
  checkMaxTotals,
  FailedEarlierError,
  OriginalElsewhereError,
  refusalError,
  RetryRefusedError,
} from '../../../src/core/send/refusals.js';
import { InputError, OutcomeUnknownError, UsageError } from '../../../src/errors.js';
import { CurrencyTotals } from '../../../src/money/amount.js';
import { CurrencyTable } from '../../../src/money/currencies.js';
import type { LookupOutcome } from '../../../src/core/status/lookup.js';
import { payoutHash } from '../../../src/state/index.js';
import { answers, failing, found, held, link, missing, payout, retry } from './history.js';

// The words of every refusal, from the decision's refused rows: the error that stops a run
// (its class, so its exit code) and each row's problem, as a person reads them.

const telling = {
  clientId: 'key-2',
  places: (rows: number[]) =>
    new Map(rows.map((r) => [r, { file: 'nov.csv', location: `line ${r + 2}` }])),
};

/** The error that stops a run of these facts, in `mode`. */
function stopped(
  facts: Facts,
  mode: 'send' | 'prepare' = 'send',
  answers = new Map<string, LookupOutcome>(),
) {
  const refused = stopping(decide(facts, mode, answers));
  return refusalError(refused, telling);
}

describe('the words of a refusal', () => {
  it('a reference held as another payout: the run that holds it, exit 2', () => {
    const other = { ...held(0, 'A'), hash: payoutHash(payout('A', '9.00')) };
    const err = stopped({ held: [other], retries: [] });
    expect(err).toBeInstanceOf(InputError);
    expect((err as InputError).problems).toEqual([
      {
        file: 'run run-a',
        field: 'reference_id',
        value: 'A',
        message:
          'was already sent to this service with a different amount, currency or recipient: give this payout a new reference_id (see `payouts runs show run-a`)',
      },
    ]);
  });

  it('payouts failed earlier: each row named, the run to write the retry file from', () => {
    const facts = {
      held: [held(0, 'A', { status: 'failed' }), held(3, 'B', { status: 'canceled' })],
      retries: [],
    };
    const err = stopped(facts, 'prepare') as FailedEarlierError;
    expect(err).toBeInstanceOf(FailedEarlierError);
    expect(err.message).toBe(
      'these 2 references already failed at the service: give them new reference_ids: `payouts runs show run-a --failed-out FILE` writes them to a file with a new_reference_id column to fill in (`--new-references -R1` fills it: each reference_id with -R1 added); nothing was sent',
    );
    expect(err.references).toEqual(['A', 'B']);
    expect(err.problems.map((p) => `${p.file} ${p.location}: ${p.message}`)).toEqual([
      'nov.csv line 2: already failed at the service (sent by run run-a on 2026-11-24 12:00 UTC): give this row a new reference_id',
      'nov.csv line 5: already canceled at the service (sent by run run-a on 2026-11-24 12:00 UTC): give this row a new reference_id',
    ]);
  });

  it('payouts failed earlier, sent from the retry file the person holds: its column to fill in', () => {
    // Issue 49: the person holds the file --failed-out wrote; the fix is its own column, or
    // --new-references, not the command that writes the file again.
    const facts = {
      held: [held(0, 'A', { status: 'failed' }), held(3, 'B', { status: 'canceled' })],
      retries: [],
    };
    const refused = stopping(decide(facts, 'send', new Map()));
    const err = refusalError(refused, {
      ...telling,
      retryFiles: new Set(['nov.csv']),
    }) as FailedEarlierError;
    expect(err.message).toBe(
      'these 2 references already failed at the service: give them new reference_ids in the new_reference_id column of nov.csv, or have `payouts runs show run-a --failed-out FILE --new-references -R1` write a file with them filled in (each reference_id with -R1 added); nothing was sent',
    );
    expect(err.problems.map((p) => p.message)).toEqual([
      'already failed at the service (sent by run run-a on 2026-11-24 12:00 UTC): fill in its new_reference_id',
      'already canceled at the service (sent by run run-a on 2026-11-24 12:00 UTC): fill in its new_reference_id',
    ]);
  });

  it('a failure retried already names the chain, not the original', () => {
    const facts = {
      held: [
        held(0, 'A', { status: 'failed' }),
        link(0, 'A', 'A-R1', { status: 'failed', retry_of: 'A', run_id: 'run-b' }),
      ],
      retries: [],
    };
    const err = stopped(facts, 'prepare') as FailedEarlierError;
    expect(err.problems[0]!.message).toMatch(
      /: retried as A-R1 in run run-b, which failed too: retry "A-R1", not the original/,
    );
  });

  it('retry rows, each with what it does wrong, in the order a row is told it', () => {
    const facts: Facts = {
      held: [
        link(0, 'P-R1', 'P'),
        held(1, 'U-R1', { retry_of: 'X' }),
        link(2, 'F-R1', 'F', { status: 'failed' }),
        link(3, 'F-R2', 'F', { status: 'failed' }),
      ],
      retries: [
        retry(0, 'P-R1', 'P'),
        retry(1, 'U-R1', 'U'),
        retry(2, 'F-R1', 'F'),
        retry(3, 'F-R2', 'F'),
        retry(4, 'S-R1', 'S', { alsoSent: { file: 'retry.csv', location: 'line 9' } }),
      ],
    };
    const err = stopped(facts) as RetryRefusedError;
    expect(err).toBeInstanceOf(RetryRefusedError);
    expect(err.message).toBe(
      'these 4 retry rows would pay a payout again or leave one unpaid: they were refused; nothing was sent',
    );
    expect(err.problems.map((p) => `${p.location} ${p.value}: ${p.message}`)).toEqual([
      'line 2 P-R1: retries reference_id "P", which was paid (run run-a on 2026-11-24 12:00 UTC): a new reference would pay it again; clear this new_reference_id',
      'line 3 U-R1: is already used at this service by another payout (run run-a on 2026-11-24 12:00 UTC, retrying "X"): give this row a new_reference_id never used',
      'line 5 F-R2: retries reference_id "F", as line 4 does: a payout is retried once; remove one of the two rows',
      'line 6 S-R1: retries reference_id "S", which line 9 sends as well: both would be paid; remove one of the two rows',
    ]);
  });

  it("tells the history's own story of an original the service holds no payout of", () => {
    const facts = (at: Parameters<typeof held>[2] | undefined): Facts => ({
      held: at ? [link(0, 'F-R1', 'F', at)] : [],
      retries: [retry(0, 'F-R1', 'F')],
      // A history that never sent F refuses the row, unless the person says so.
      originalElsewhere: true,
    });
    const story = (at?: Parameters<typeof held>[2]) =>
      (stopped(facts(at), 'send', answers(missing('F'))) as RetryRefusedError).problems[0]!.message;
    expect(story()).toContain('(the history does not know it)');
    expect(story({ status: 'failed' })).toContain('(the history says failed (run run-a))');
    // Written by hand in capitals, it is failed all the same, not a payout in doubt.
    expect(story({ status: 'FAILED' })).toContain('(the history says FAILED (run run-a))');
    expect(story({ status: 'Canceled' })).toContain('(the history says Canceled (run run-a))');
  });

  it('the service: another payout, no answer, an original not failed or not answered', () => {
    const facts: Facts = {
      held: [held(0, 'A', { client_id: 'key-1' })],
      retries: [retry(1, 'F-R1', 'F')],
      clientId: 'key-2',
      originalElsewhere: true,
    };
    const other = stopped(facts, 'send', answers(found('A', 'success', 7), found('F', 'failed')));
    expect((other as InputError).problems[0]).toMatchObject({
      file: 'run run-a',
      message: expect.stringMatching(
        /^run run-a recorded this payout as sent under Client-Id key-1, but the service, asked with Client-Id key-2, holds another payout under this reference_id \(amount 7\)/,
      ),
    });
    const silent = stopped(facts, 'send', answers(failing('A'), found('F', 'failed')));
    expect(silent).toBeInstanceOf(OutcomeUnknownError);
    expect(silent.message).toBe(
      'could not look up 1 payout at the service before sending (HTTP 503); nothing was sent: run the same command again when the service answers',
    );
    const paid = stopped(facts, 'send', answers(found('A'), found('F')));
    expect((paid as RetryRefusedError).problems[0]!.message).toContain(
      'retries reference_id "F", which the service holds as "success" (transaction T-F): a new reference would pay it again; clear this new_reference_id',
    );
    const unproved = stopped(facts, 'send', answers(found('A'), failing('F')));
    expect(unproved.message).toBe(
      'could not look up reference_id "F" at the service (HTTP 503): a retry is sent only once the service says its original failed; nothing was sent: run the same command again when the service answers',
    );
  });
});

describe('a retry row whose original this history never sent', () => {
  const facts: Facts = { held: [], retries: [retry(0, 'F-R1', 'F'), retry(1, 'G-R1', 'G')] };
  const here = { ...telling, history: 'the history in /home/ana/.local/state/payouts/state.db' };

  it('is refused before any lookup, naming where the history is and how to share one (exit 2)', () => {
    const d = decide(facts, 'send');
    expect(asksOf(d)).toEqual([]);
    const err = refusalError(stopping(d), here) as OriginalElsewhereError;
    expect(err).toBeInstanceOf(OriginalElsewhereError);
    expect(err).toBeInstanceOf(InputError);
    expect(err.message).toBe(
      "these 2 retry rows retry payouts that the history in /home/ana/.local/state/payouts/state.db never sent: a retry of them sent from another machine or folder cannot be seen from here. Send from the history that sent them, or share one history (PAYOUTS_STATE_URL, docs/shared-history.md); if you know no other retry was sent, pass --original-elsewhere (a retry then goes only on the service's word that its original failed); nothing was sent",
    );
    expect(err.problems.map((p) => `${p.location} ${p.field} ${p.value}: ${p.message}`)).toEqual([
      'line 2 new_reference_id F-R1: retries reference_id "F", which this history never sent: a retry of it sent elsewhere cannot be seen here, and if one was sent this row pays the payout twice',
      'line 3 new_reference_id G-R1: retries reference_id "G", which this history never sent: a retry of it sent elsewhere cannot be seen here, and if one was sent this row pays the payout twice',
    ]);
  });

  it('goes with --original-elsewhere on the service’s word alone, and is named', () => {
    const d = decide({ ...facts, originalElsewhere: true }, 'send');
    expect(stopping(d)).toEqual([]);
    expect(asksOf(d).map((a) => `${a.ref} (${a.why})`)).toEqual(['F (original)', 'G (original)']);
    expect(d.elsewhere.map((r) => r.reference_id)).toEqual(['F-R1', 'G-R1']);
    const failedThere = decide(
      { ...facts, originalElsewhere: true },
      'send',
      answers(found('F', 'failed'), found('G', 'canceled')),
    );
    expect(stopping(failedThere)).toEqual([]);
    expect(
      splitOf(failedThere, { totals: new CurrencyTotals() }, new CurrencyTable(), 100).elsewhere,
    ).toEqual([
      { reference_id: 'F-R1', retry_of: 'F' },
      { reference_id: 'G-R1', retry_of: 'G' },
    ]);
  });
});

describe('checkMaxTotals', () => {
  const currencies = new CurrencyTable();
  const totals = new CurrencyTotals();
  for (let i = 0; i < 3; i++) totals.add('EUR', 100n);
  const split = splitOf(
    decide({ held: [held(0, 'A')], retries: [] }, 'send'),
    { totals },
    currencies,
    100,
  );

  it('counts what may move: the files less what was sent earlier', () => {
    expect(() =>
      checkMaxTotals(split, [{ currency: 'EUR', amountText: '2.00' }], currencies),
    ).not.toThrow();
    let err: unknown;
    try {
      checkMaxTotals(split, [{ currency: 'EUR', amountText: '1.50' }], currencies);
    } catch (e) {
      err = e;
    }
    expect((err as InputError).problems).toEqual([
      {
        file: '--max-total',
        field: 'EUR',
        value: '1.50',
        message:
          'this run would send EUR 2.00 (of EUR 3.00 in the files, EUR 1.00 was sent earlier), above the limit of EUR 1.50; nothing was sent',
      },
    ]);
  });

  it('refuses a limit it cannot read, as a usage error', () => {
    expect(() => checkMaxTotals(split, [{ currency: 'XYZ', amountText: '1' }], currencies)).toThrow(
      UsageError,
    );
  });
});
