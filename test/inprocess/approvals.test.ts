import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sql } from '../helpers/insider.js';
import { parseJsonStdout } from '../helpers/cli.js';
import { ledgerPerTest } from '../helpers/ledger-service.js';
import { FakeClock, type MainOptions, runMain } from '../helpers/main.js';
import { recycledDatabase, teamRoles } from '../helpers/pg.js';

// Issue 32's story: four eyes on every run. Ana prepares, Bob approves, CI sends; the
// database, not only the client, keeps the rule.

const fixture = ledgerPerTest();

/** A payout file; `bump` moves the second row's amount by one cent. */
function payoutFile(dir: string, name: string, refs: string[], bump = false): string {
  const file = join(dir, name);
  const rows = refs.map(
    (r, i) => `${r},${i === 1 && bump ? '2.01' : `${i + 1}.00`},EUR,${r.toLowerCase()}@ex.com`,
  );
  writeFileSync(file, `reference_id,amount,currency,recipient\n${rows.join('\n')}\n`);
  return file;
}

/** The prepared run id a --prepare run printed. */
function prepIdOf(stdout: string): string {
  const id = /^Prepared run (p[0-9a-f]{15}): nothing was sent\.$/m.exec(stdout)?.[1];
  expect(id).toBeDefined();
  return id!;
}

/** Runs one statement as a role, bypassing the client: its error message, or undefined. */
const asRole = (url: string, text: string, params: unknown[] = []) => sql(url, [text, params]);

describe('approvals on a shared history', () => {
  it('policy on: prepared by one role, approved by another, sent once', async () => {
    const admin = await recycledDatabase();
    const svc = await fixture.start();
    const [anaHome, bobHome, ciHome] = [fixture.home(), fixture.home(), fixture.home()];
    const run = (home: typeof anaHome, url: string, args: string[], opts: MainOptions = {}) =>
      runMain(args, {
        env: { ...svc.env(home.env), PAYOUTS_STATE_URL: url },
        clock: new FakeClock(),
        ...opts,
      });
    // An administrator turns the rule on (creating the tables), then grants the two roles.
    const on = await run(anaHome, admin, ['approvals', 'require']);
    expect(on.code).toBe(0);
    expect(on.stdout).toMatch(/: on: every run needs another person's approval/);
    const { ana, bob } = await teamRoles(admin);
    const refs = ['MAY-1', 'MAY-2', 'MAY-3'];
    const file = payoutFile(anaHome.dir, 'may.csv', refs);

    // A plain send is refused: nothing sent, exit 9 (awaiting approval), the command named.
    const plain = await run(anaHome, ana, ['send', file, '--yes']);
    expect(plain.code).toBe(9);
    expect(plain.stderr).toMatch(
      /asks another person's approval .* nothing was sent\. Prepare them with `payouts send .*may\.csv --prepare`/,
    );
    expect(svc.creates).toBe(0);

    const prepared = await run(anaHome, ana, ['send', file, '--prepare', '--note', 'May payroll']);
    expect(prepared.code).toBe(0);
    const prep = prepIdOf(prepared.stdout);
    expect(prepared.stderr).toMatch(/Totals: +EUR 6\.00 +\(3 payouts\)/);
    expect(prepared.stderr).toContain(`payouts approve ${prep}`);
    expect(svc.creates).toBe(0);

    // Not yet approved: the send says who must do what.
    const early = await run(anaHome, ana, ['send', file, '--yes']);
    expect(early.code).toBe(9);
    expect(early.stderr).toContain(`Ask someone else to run \`payouts approve ${prep}\``);

    // Ana cannot approve her own run: the client refuses, and so does the database.
    const own = await run(anaHome, ana, ['approve', prep, '--yes']);
    expect(own.code).toBe(2);
    expect(own.stderr).toMatch(/you \(role ana_\w+\) prepared run p\w+: another person/);
    const bypass = await asRole(
      ana,
      `INSERT INTO approvals (prep, decision, by_role, at)
       SELECT id, 'approved', 'someone-else', 'now' FROM prepared_runs WHERE prep_id = $1`,
      [prep],
    );
    expect(bypass).toMatch(/ana_\w+ prepared run p\w+ and cannot approve or reject it/);

    // Bob approves, once.
    const approved = await run(bobHome, bob, ['approve', prep, '--yes']);
    expect(approved.code).toBe(0);
    expect(approved.stderr).toMatch(/Prepared by: +role ana_\w+ \(.+@.+\) at /);
    expect(approved.stderr).toMatch(/Note: +May payroll/);
    expect(approved.stdout).toMatch(/^Approved run p\w+\./);
    const again = await run(bobHome, bob, ['approve', prep, '--yes']);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/was already approved by role bob_\w+/);
    // Approvals are never changed or deleted, whoever asks.
    expect(await asRole(bob, 'UPDATE approvals SET decision = $1', ['rejected'])).toMatch(
      /permission denied|never changed or deleted/,
    );
    expect(await asRole(admin, 'DELETE FROM approvals')).toMatch(
      /approvals rows are never changed or deleted/,
    );

    // A file one amount away from what was approved is refused, the row named.
    const off = payoutFile(anaHome.dir, 'may-edited.csv', refs, true);
    const edited = await run(anaHome, ana, ['send', off, '--yes']);
    expect(edited.code).toBe(9);
    expect(edited.stderr).toMatch(
      /differ from approved run p\w+ .*MAY-2: EUR 2\.01 to may-2@ex\.com here, EUR 2\.00 to may-2@ex\.com approved/,
    );
    expect(svc.creates).toBe(0);

    // The approved file goes, once.
    const sent = await run(anaHome, ana, ['send', file, '--yes', '--json']);
    expect(sent.code).toBe(0);
    const runId = parseJsonStdout<{ run_id: string }>(sent).run_id;
    expect([...svc.held.keys()].sort()).toEqual(refs);
    expect(
      await asRole(
        bob,
        "INSERT INTO approvals (prep, decision, by_role, at) SELECT id, 'rejected', 'x', 'x' FROM prepared_runs",
      ),
    ).toMatch(/already approved, rejected or sent/);

    // A second run, approved by Bob, sent by CI from an empty folder with the history alone.
    const june = payoutFile(anaHome.dir, 'june.csv', ['JUNE-1', 'JUNE-2']);
    const prep2 = prepIdOf((await run(anaHome, ana, ['send', june, '--prepare'])).stdout);
    expect((await run(bobHome, bob, ['approve', prep2, '--yes'])).code).toBe(0);
    const ci = await run(ciHome, ana, ['send', '--approved', prep2, '--yes', '--json']);
    expect(ci.code).toBe(0);
    expect(svc.held.has('JUNE-1') && svc.held.has('JUNE-2')).toBe(true);
    const creates = svc.creates;
    // Again, and the first one from the history too: everything was sent earlier.
    const twice = await run(ciHome, ana, ['send', '--approved', prep2, '--yes', '--json']);
    expect(parseJsonStdout<{ sent_earlier_count: number }>(twice).sent_earlier_count).toBe(2);
    const first = await run(ciHome, ana, ['send', '--approved', prep, '--yes', '--json']);
    expect(first.code).toBe(0);
    expect(parseJsonStdout<{ sent_earlier_count: number }>(first).sent_earlier_count).toBe(3);
    expect(svc.creates).toBe(creates);
    expect(svc.appliedTwice()).toEqual([]);

    // The audit trail: who prepared, who approved, which run sent it.
    type Trail = {
      approval: {
        prepared_run_id: string;
        state: string;
        note: string;
        prepared_by: { role: string };
        events: Array<{
          decision: string;
          by: { role: string };
          run_id: string | null;
          at: string;
        }>;
      };
    };
    const shown = await run(bobHome, bob, ['runs', 'show', runId, '--json']);
    const trail = parseJsonStdout<Trail>(shown).approval;
    expect(trail.prepared_run_id).toBe(prep);
    expect(trail.state).toBe('sent');
    expect(trail.note).toBe('May payroll');
    expect(trail.prepared_by.role).toMatch(/^ana_/);
    expect(trail.events.map((e) => [e.decision, e.by.role.slice(0, 4), e.run_id])).toEqual([
      ['approved', 'bob_', null],
      ['sent', 'ana_', runId],
    ]);
    const list = parseJsonStdout<{ prepared_runs: Array<{ state: string }> }>(
      await run(bobHome, bob, ['runs', '--json']),
    );
    expect(list.prepared_runs.map((r) => r.state)).toEqual(['sent', 'sent']);
    // On a pipe the runs' table comes first, as docs/output.md's scripts read it (header on
    // line 1), and the prepared runs after it, as docs/approvals.md says.
    const lines = (await run(bobHome, bob, ['runs'])).stdout.split('\n');
    expect(lines[0]).toMatch(/^run\tlast activity \(UTC\)\t/);
    const prepHead = lines.findIndex((l) => l.startsWith('prepared run\t'));
    expect(prepHead).toBeGreaterThan(lines.findIndex((l) => l.startsWith(runId)));
  });

  it('a rejected run is not sent, and a rule above an amount leaves smaller runs alone', async () => {
    const admin = await recycledDatabase();
    const svc = await fixture.start();
    const home = fixture.home();
    const run = (url: string, args: string[]) =>
      runMain(args, {
        env: { ...svc.env(home.env), PAYOUTS_STATE_URL: url },
        clock: new FakeClock(),
      });
    expect((await run(admin, ['approvals', 'require', '--above', 'EUR=5.00'])).code).toBe(0);
    const { ana, bob } = await teamRoles(admin);
    const small = payoutFile(home.dir, 'small.csv', ['S-1', 'S-2']);
    expect((await run(ana, ['send', small, '--yes'])).code).toBe(0);
    const big = payoutFile(home.dir, 'big.csv', ['B-1', 'B-2', 'B-3']);
    const prep = prepIdOf((await run(ana, ['send', big, '--prepare'])).stdout);
    const rejected = await run(bob, [
      'approve',
      prep,
      '--reject',
      '--reason',
      'wrong month',
      '--yes',
    ]);
    expect(rejected.code).toBe(0);
    const refused = await run(ana, ['send', big, '--yes']);
    expect(refused.code).toBe(10);
    expect(refused.stderr).toMatch(/was rejected by role bob_\w+ .*"wrong month"/);
    // payouts runs says why, not only who.
    const listed = await run(ana, ['runs']);
    expect(listed.stdout).toMatch(
      new RegExp(`^${prep}\t.*\trejected by bob_\\w+: "wrong month"\t`, 'm'),
    );
    expect(svc.held.has('B-1')).toBe(false);
    // Clients may not change the rule; its changes are listed with who and when.
    const off = await run(ana, ['approvals', 'off']);
    expect(off.code).toBe(2);
    expect(off.stderr).toMatch(
      /only the owner of the history changes the rule: role ana_\w+ may read it/,
    );
    const shown = await run(bob, ['approvals', 'show']);
    expect(shown.stdout).toMatch(/on: a run whose total is above EUR 5\.00 needs/);
    expect(shown.stdout).toMatch(/ {2}\d{4}-\d\d-\d\dT.* role postgres/);
    const rule = parseJsonStdout<{ changes: Array<{ set_by: string; above: unknown[] }> }>(
      await run(bob, ['approvals', 'show', '--json']),
    );
    expect(rule.changes).toEqual([
      expect.objectContaining({ set_by: 'postgres', above: [{ currency: 'EUR', amount: '5.00' }] }),
    ]);
  });

  it('on a local history, approvals refuse with exit 2 and say how to share one', async () => {
    const svc = await fixture.start();
    const home = fixture.home();
    const file = payoutFile(home.dir, 'x.csv', ['X-1']);
    for (const args of [
      ['approvals', 'require'],
      ['approve', 'p123'],
      ['send', file, '--prepare'],
      ['send', '--approved', 'p123'],
    ]) {
      const r = await runMain(args, { env: svc.env(home.env) });
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/needs a shared history: .*PAYOUTS_STATE_URL=postgres:/);
    }
  });
});
