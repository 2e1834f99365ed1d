import { describe, expect, it } from 'vitest';
import { parseJsonStdout } from '../helpers/cli.js';
import { failsThese, ledgerPerTest } from '../helpers/ledger-service.js';
import { STORES, storeEnv } from '../helpers/pg.js';
import { HEADER, RETRY_HEADER, retrySetUp, sendArgs } from '../helpers/retry.js';

// Issue 49: a send's summary (and a dry run's) names the new recipients and what changed
// since the same series' last run, a redirected salary as a changed recipient, and a retry
// that pays another recipient than its original; compared only within a series.

const fixture = ledgerPerTest();

/** A month of salaries: Felix's, Berta's, Chris's, the month's name in each description. */
function month(name: string, felix = 'felix@ex.com'): string[] {
  // References of the payroll system: a number each month, nothing to pair them by.
  const tag = name === 'November' ? 'P0411' : 'P0412';
  return [
    HEADER,
    `${tag}-A,3061.76,EUR,${felix},Gehalt ${name} Felix Höß 20`,
    `${tag}-B,2500.00,EUR,berta@ex.com,Gehalt ${name} Berta Kurz 21`,
    `${tag}-C,2500.00,EUR,chris@ex.com,Gehalt ${name} Chris Lang 22`,
  ];
}

interface Change {
  change: string;
  before: { reference_id: string; recipient: string } | null;
  after: { reference_id: string; recipient: string } | null;
  matched_by: string | null;
  fields: string[];
}

interface Compared {
  compared_with: {
    run_id: string;
    series: { by: string; pattern: string };
    recipient_changed_count: number;
    changes: Change[];
  } | null;
  retry_changes: Change[];
}

for (const store of STORES) {
  describe(`the summary against the series' last run (${store})`, () => {
    const withStore = storeEnv(store, { migrated: true });

    it('names a redirected salary as a changed recipient, in the dry run, the send and --json', async () => {
      const { run, write } = await retrySetUp(fixture, withStore);
      const nov = await run([
        'send',
        write('gehalt-november.csv', month('November')),
        '--yes',
        '--json',
      ]);
      expect(nov.code, nov.stderr).toBe(0);
      const novRun = parseJsonStdout<{ run_id: string }>(nov).run_id;
      const dec = write('gehalt-dezember.csv', month('Dezember', 'mallory+new@evil.example'));

      // The dry run keeps no descriptions: the amount, Felix's alone, pairs the rows.
      const dry = await run(['send', dec, '--dry-run']);
      expect(dry.code, dry.stderr).toBe(0);
      expect(dry.stderr).toMatch(/^New recipients: 1, EUR 3,061\.76: mallory\+new@evil\.example$/m);
      expect(dry.stderr).toContain(`Changes:        against run ${novRun} of `);
      expect(dry.stderr).toMatch(
        /\(input name pattern "gehalt-<month>\.csv"\): 0 added, 0 removed, 1 changed \(1 recipient changed\)$/m,
      );
      expect(dry.stderr).toMatch(
        /^ {16}recipient changed: P0412-A EUR 3,061\.76: was felix@ex\.com \(P0411-A\), now mallory\+new@evil\.example; matched by amount "EUR 3061\.76"$/m,
      );
      expect(dry.stderr).toMatch(/^ {16}EUR 8,061\.76 then, EUR 8,061\.76 now$/m);
      const doc = parseJsonStdout<Compared>(await run(['send', dec, '--dry-run', '--json']));
      expect(doc.compared_with).toMatchObject({
        run_id: novRun,
        series: { by: 'input_name', pattern: 'gehalt-<month>.csv' },
        recipient_changed_count: 1,
      });
      expect(doc.compared_with!.changes).toEqual([
        expect.objectContaining({
          before: expect.objectContaining({ reference_id: 'P0411-A', recipient: 'felix@ex.com' }),
          after: expect.objectContaining({
            reference_id: 'P0412-A',
            recipient: 'mallory+new@evil.example',
          }),
          fields: ['recipient'],
        }),
      ]);

      // The send's own summary says the same before it asks.
      const sent = await run(['send', dec, '--yes', '--json']);
      expect(sent.code, sent.stderr).toBe(0);
      // With descriptions kept, Felix's (its month left out) pairs the rows.
      expect(sent.stderr).toMatch(
        /recipient changed: P0412-A EUR 3,061\.76: was felix@ex\.com \(P0411-A\), now mallory\+new@evil\.example; matched by description "gehalt <month> felix höß 20"/,
      );
      expect(parseJsonStdout<Compared>(sent).compared_with?.changes[0]?.matched_by).toBe(
        'description',
      );
    });

    it('compares a retry with its original, and a retry file with no other series', async () => {
      const { run, write } = await retrySetUp(
        fixture,
        withStore,
        failsThese(new Set(['JUL-1', 'AUG-2'])),
      );
      // A July test run, then August's payouts, of which one fails.
      const test = write('july-test.csv', [HEADER, 'JUL-1,0.10,EUR,test@ex.com,test']);
      const t = await run(['send', test, '--yes']);
      expect(t.code, t.stderr).toBe(4);
      const aug = write('august.csv', [
        HEADER,
        'AUG-1,1000.00,EUR,a@ex.com,fee',
        'AUG-2,2000.00,EUR,b@ex.com,fee',
      ]);
      expect((await run(sendArgs(aug))).code).toBe(4);
      // The retry pays another account than the original did.
      const retry = write('retry.csv', [
        RETRY_HEADER,
        'AUG-2,AUG-2-R1,2000.00,EUR,eve@evil.example,fee',
      ]);
      const dry = await run(['send', retry, '--dry-run', '--json']);
      expect(dry.code, dry.stderr).toBe(0);
      const doc = parseJsonStdout<Compared>(dry);
      // Not compared with the July test run, nor with August: no run is of its series.
      expect(doc.compared_with).toBeNull();
      expect(doc.retry_changes).toEqual([
        expect.objectContaining({
          before: expect.objectContaining({ reference_id: 'AUG-2', recipient: 'b@ex.com' }),
          after: expect.objectContaining({
            reference_id: 'AUG-2-R1',
            recipient: 'eve@evil.example',
          }),
          matched_by: 'retry_of',
          fields: ['recipient'],
        }),
      ]);
      const text = await run(['send', retry, '--dry-run']);
      expect(text.stderr).toMatch(
        /^Retry changes: +1 retry pays another amount or recipient than the original$/m,
      );
      expect(text.stderr).toMatch(
        /^ {16}recipient changed: AUG-2-R1 EUR 2,000\.00: was b@ex\.com \(its original AUG-2\), now eve@evil\.example$/m,
      );
      expect(text.stderr).not.toMatch(/^Changes:/m);
    });
  });
}
