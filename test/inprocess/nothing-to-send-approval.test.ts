import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ledgerPerTest } from '../helpers/ledger-service.js';
import { FakeClock, runMain } from '../helpers/main.js';
import { STORES, storeEnv } from '../helpers/pg.js';

// A send and a dry run with nothing to send say that the approval rule does not apply, where
// the rule would ask an approval of their payouts: the rule is about what moves (on a shared
// history whose rule came after the payouts were sent, the run is not refused for want of
// approval), while a run with something to send is refused as before. --json always says.

const fixture = ledgerPerTest();

const NONE = { state: 'not_needed', prepared_run_id: null, text: 'not needed: nothing to send' };

describe.each(STORES)('a run with nothing to send (%s)', (store) => {
  const withStore = storeEnv(store, { migrated: true });

  it('prints its Approval: line and approval_status, dry run and send alike', async () => {
    const svc = await fixture.start();
    const home = fixture.home();
    const run = (args: string[]) =>
      runMain(args, { env: withStore(svc.env(home.env)), clock: new FakeClock() });
    const file = join(home.dir, 'nov.csv');
    const lines = ['reference_id,amount,currency,recipient', 'N-1,5.00,EUR,n1@ex.com'];
    writeFileSync(file, `${[...lines, 'N-2,7.00,EUR,n2@ex.com'].join('\n')}\n`);
    expect((await run(['send', file, '--yes'])).code).toBe(0);
    // On a shared history, the team's rule is turned on after November was paid.
    if (store === 'postgres') expect((await run(['approvals', 'require'])).code).toBe(0);

    const again = await run(['send', file, '--yes']);
    expect(again.code, again.stderr).toBe(0);
    // Said where it informs (issue 49): where the team's rule would ask an approval of these
    // payouts; a history that keeps no rule is told nothing of it.
    if (store === 'postgres') {
      expect(again.stderr).toMatch(
        /^Approval: +not needed: nothing to send\nNothing to send: all 2 payouts were sent earlier/m,
      );
    } else {
      expect(again.stderr).toMatch(/^Nothing to send: all 2 payouts were sent earlier/m);
      expect(again.stderr).not.toContain('Approval:');
    }
    const doc = await run(['send', file, '--yes', '--json']);
    expect(doc.code, doc.stderr).toBe(0);
    const sent = JSON.parse(doc.stdout);
    expect(sent.approval_status).toEqual(NONE);
    expect(sent).not.toHaveProperty('approval');

    const dry = await run(['send', file, '--dry-run']);
    expect(dry.code, dry.stderr).toBe(0);
    if (store === 'postgres')
      expect(dry.stderr).toMatch(/^Approval: +not needed: nothing to send$/m);
    else expect(dry.stderr).not.toContain('Approval:');
    const dryDoc = await run(['send', file, '--dry-run', '--json']);
    expect(JSON.parse(dryDoc.stdout).approval_status).toEqual(NONE);
    expect([svc.posts.get('N-1'), svc.posts.get('N-2')]).toEqual([1, 1]);

    // One payout more is something to send: the rule applies to it again.
    writeFileSync(file, `${[...lines, 'N-3,9.00,EUR,n3@ex.com'].join('\n')}\n`);
    const more = await run(['send', file, '--yes', '--json']);
    if (store === 'postgres') {
      expect(more.code).toBe(9);
      expect(svc.posts.get('N-3')).toBeUndefined();
    } else {
      expect(more.code, more.stderr).toBe(0);
      expect(JSON.parse(more.stdout).approval_status.state).toBe('not_checked');
      expect(svc.posts.get('N-3')).toBe(1);
    }
    expect(svc.appliedTwice()).toEqual([]);
  });
});
