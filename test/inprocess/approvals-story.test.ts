import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseJsonStdout } from '../helpers/cli.js';
import { type CreatePolicy, holdsFirst, ledgerPerTest } from '../helpers/ledger-service.js';
import { FakeClock, type MainOptions, runMain } from '../helpers/main.js';
import { recycledDatabase, schemaOf, teamRoles } from '../helpers/pg.js';
import type { SendDoc } from '../../src/core/documents.js';

// Issue 40's story: the approver judges what they approve, every summary says whether the
// rule applies, and CI drives prepare -> wait -> send with --json and exit codes alone.

const fixture = ledgerPerTest();

/** A payroll file: [reference, amount, recipient] rows in EUR. */
function payroll(dir: string, name: string, rows: Array<[string, string, string]>): string {
  const file = join(dir, name);
  const lines = rows.map(([ref, amount, to]) => `${ref},${amount},EUR,${to},salary`);
  writeFileSync(file, `reference_id,amount,currency,recipient,description\n${lines.join('\n')}\n`);
  return file;
}

/** An empty history its owner (`admin`) turned the rule on for, a service and a home. */
async function ruled(policy?: CreatePolicy, rule: string[] = []) {
  const admin = await recycledDatabase();
  const svc = await fixture.start(policy);
  const home = fixture.home();
  const env = (url: string) => ({ ...svc.env(home.env), PAYOUTS_STATE_URL: url });
  expect((await runMain(['approvals', 'require', ...rule], { env: env(admin) })).code).toBe(0);
  return { admin, svc, home, env };
}

/** Five employees paid `amount` each, DEC-5 (or NOV-5) paid `fifth`, DEC-3 to `third`. */
function month(
  prefix: string,
  fifth: string,
  third = 'e3@ex.com',
): Array<[string, string, string]> {
  return [1, 2, 3, 4, 5].map((i) => [
    `${prefix}-${i}`,
    i === 5 ? fifth : '8000.00',
    i === 3 ? third : `e${i}@ex.com`,
  ]);
}

/** The prepared run document, as far as the story reads it. */
interface PreparedDoc {
  schema_version: number;
  prepared_run_id: string;
  state: string;
  payout_count: number;
  totals: Record<string, { count: number; total: string }>;
  expires_at: string;
  approve_command: string;
  new_recipients: {
    count: number;
    all: boolean;
    totals: Record<string, { total: string }>;
    recipients: Array<{ recipient: string }>;
  };
  compared_with: Array<{
    relation: string;
    prepared_run_id: string;
    series: { by: string; pattern: string };
    matched_by: string;
    added_count: number;
    removed_count: number;
    changed_count: number;
    totals_then: Record<string, { total: string }>;
    totals_now: Record<string, { total: string }>;
    changes: Array<{
      change: string;
      before: { recipient: string; amount: string } | null;
      after: { recipient: string; amount: string } | null;
      matched_by: string | null;
    }>;
  }>;
  earlier: { sent_count: number; other_count: number; to_send_count: number };
  reviews: Array<{
    decision: string;
    reason: string | null;
    screen: { lines: string[]; compared_with: unknown } | null;
  }>;
  duplicates: Array<{ prepared_run_id: string; state: string }>;
  payouts: Array<{ reference_id: string; attention: string[] }>;
}

/** What CI reads of a send document. */

describe('the approval story: two months of payroll', () => {
  it('a swapped recipient is flagged, rejected, corrected, compared, and CI sends it by exit codes', async () => {
    const admin = await recycledDatabase();
    const svc = await fixture.start();
    const [anaHome, bobHome, ciHome] = [fixture.home(), fixture.home(), fixture.home()];
    const run = (home: typeof anaHome, url: string, args: string[], opts: MainOptions = {}) =>
      runMain(args, {
        ...opts,
        env: { ...svc.env(home.env), PAYOUTS_STATE_URL: url, NO_COLOR: '1' },
        clock: new FakeClock(),
      });
    expect((await run(anaHome, admin, ['approvals', 'require'])).code).toBe(0);
    const { ana, bob } = await teamRoles(admin);
    const prepare = async (file: string) => {
      const r = await run(anaHome, ana, ['send', file, '--prepare', '--json']);
      expect(r.code).toBe(0);
      return parseJsonStdout<PreparedDoc>(r);
    };
    /** CI: sends an approved run; the exit code alone says what happened. */
    const ci = async (prep: string, as = ana) => {
      const r = await run(ciHome, as, ['send', '--approved', prep, '--yes', '--json']);
      return { code: r.code, doc: parseJsonStdout<SendDoc>(r) };
    };

    // November: everyone is new to this history; CI waits (exit 9) until Bob approves.
    const nov = await prepare(payroll(anaHome.dir, 'nov.csv', month('NOV', '8000.00')));
    expect(nov.schema_version).toBe(1);
    expect(nov.payout_count).toBe(5);
    expect(nov.totals.EUR!.total).toBe('40000.00');
    expect(nov.new_recipients.count).toBe(5);
    // Everyone new: said once, not on each row.
    expect(nov.new_recipients.all).toBe(true);
    expect(nov.payouts.flatMap((p) => p.attention)).not.toContain('new recipient');
    expect(nov.approve_command).toBe(`payouts approve ${nov.prepared_run_id}`);
    expect(nov.expires_at).toMatch(/^\d{4}-\d\d-\d\dT/);
    const waiting = await ci(nov.prepared_run_id);
    expect(waiting.code).toBe(9);
    expect(waiting.doc.error?.approval).toEqual(
      expect.objectContaining({ state: 'awaiting_approval', prepared_run_id: nov.prepared_run_id }),
    );
    expect(svc.creates).toBe(0);
    const approved = await run(bobHome, bob, ['approve', nov.prepared_run_id, '--yes', '--json']);
    expect(parseJsonStdout<PreparedDoc>(approved).state).toBe('approved');
    const sent = await ci(nov.prepared_run_id);
    expect(sent.code).toBe(0);
    expect(sent.doc.approval?.prepared_run_id).toBe(nov.prepared_run_id);
    expect(sent.doc.approval?.approvers.map((a) => a.role.slice(0, 4))).toEqual(['bob_']);
    expect(svc.held.size).toBe(5);

    // December: e3's pay goes to a new address, and DEC-5 is 45,000.00.
    const decFile = payroll(
      anaHome.dir,
      'dec.csv',
      month('DEC', '45000.00', 'mallory+new@evil.example'),
    );
    const dec = await prepare(decFile);
    expect(dec.new_recipients.count).toBe(1);
    expect(dec.new_recipients.recipients[0]!.recipient).toBe('mallory+new@evil.example');
    expect(dec.new_recipients.totals.EUR!.total).toBe('8000.00');
    const vsNov = dec.compared_with[0]!;
    // The same series (nov.csv, dec.csv); e3's pay redirected is one change, not a hire and a leaver.
    expect(vsNov).toMatchObject({
      relation: 'last_approved',
      prepared_run_id: nov.prepared_run_id,
      series: { by: 'input_name', pattern: '<month>.csv' },
      matched_by: 'recipient',
      added_count: 0,
      removed_count: 0,
      changed_count: 2,
      recipient_changed_count: 1,
    });
    expect(vsNov.changes[0]).toEqual({
      change: 'changed',
      before: { reference_id: 'NOV-3', amount: '8000.00', currency: 'EUR', recipient: 'e3@ex.com' },
      after: {
        reference_id: 'DEC-3',
        amount: '8000.00',
        currency: 'EUR',
        recipient: 'mallory+new@evil.example',
      },
      matched_by: 'reference_pattern',
      matched_on: '<month>-3',
      fields: ['recipient'],
    });
    expect(vsNov.totals_then.EUR!.total).toBe('40000.00');
    expect(vsNov.totals_now.EUR!.total).toBe('77000.00');
    expect(dec.payouts.find((p) => p.reference_id === 'DEC-3')!.attention).toContain(
      'new recipient',
    );

    // Bob's screen on a terminal: the swapped row first, flagged; the growth against November.
    const screen = await run(bobHome, bob, ['runs', 'show', dec.prepared_run_id], {
      terminal: { columns: 160 },
    });
    expect(screen.code).toBe(0);
    expect(screen.stdout).toMatch(/^Service: +http:\/\/127\.0\.0\.1:\d+$/m);
    expect(screen.stdout).toMatch(
      /^ {2}recipient changed: DEC-3 EUR 8,000\.00: was e3@ex\.com \(NOV-3\), now mallory\+new@evil\.example; matched by reference pattern "<month>-3"$/m,
    );
    expect(screen.stdout).toMatch(/^ {2}of this series: input name pattern "<month>\.csv"$/m);
    expect(screen.stdout).not.toMatch(/added: |removed: /);
    expect(screen.stdout).toMatch(
      /New recipients: 1, EUR 8,000\.00 \(1 payout\): mallory\+new@evil\.example/,
    );
    expect(screen.stdout).toMatch(/EUR 40,000\.00 then, EUR 77,000\.00 now \(\+92\.5 %\)/);
    const table = screen.stdout.split('\n').filter((l) => /^\S/.test(l));
    const head = table.findIndex((l) => /^row +reference_id +amount/.test(l));
    expect(table[head + 1]).toMatch(
      /^3 +DEC-3 +8,000\.00 +EUR +mallory\+new@evil\.example +new recipient; recipient changed: was e3@ex\.com, now mallory/,
    );
    expect(table[head + 2]).toMatch(/^5 +DEC-5 +45,000\.00 .*was EUR 8,000\.00 to e5@ex\.com/);

    // Rejected, with a reason CI and the clerk both get, each with exit 10.
    const reason = 'DEC-3 goes to a new address: check it with e3';
    const rejected = await run(bobHome, bob, [
      'approve',
      dec.prepared_run_id,
      '--reject',
      '--reason',
      reason,
      '--yes',
      '--json',
    ]);
    expect(parseJsonStdout<PreparedDoc>(rejected).state).toBe('rejected');
    const refused = await ci(dec.prepared_run_id);
    expect(refused.code).toBe(10);
    expect(refused.doc.error?.approval).toMatchObject({ state: 'rejected', reason });
    const clerk = await run(anaHome, ana, ['send', decFile, '--yes']);
    expect(clerk.code).toBe(10);
    expect(clerk.stderr).toContain(reason);
    // The decision keeps the screen it was made on.
    const asRejected = parseJsonStdout<PreparedDoc>(
      await run(bobHome, bob, ['runs', 'show', dec.prepared_run_id, '--json']),
    );
    expect(asRejected.reviews).toHaveLength(1);
    expect(asRejected.reviews[0]).toMatchObject({ decision: 'rejected', reason });
    expect(asRejected.reviews[0]!.screen!.compared_with).toEqual(dec.compared_with);
    expect(asRejected.reviews[0]!.screen!.lines).toContain(
      'New recipients: 1, EUR 8,000.00 (1 payout): mallory+new@evil.example',
    );

    // Corrected and prepared again: compared with the rejected run, row by row.
    const fixed = payroll(anaHome.dir, 'dec-fixed.csv', month('DEC', '45000.00'));
    const dec2 = await prepare(fixed);
    expect(dec2.new_recipients.count).toBe(0);
    expect(dec2.compared_with.map((c) => [c.relation, c.prepared_run_id])).toEqual([
      ['rejected_predecessor', dec.prepared_run_id],
      ['last_approved', nov.prepared_run_id],
    ]);
    expect(dec2.compared_with[0]).toMatchObject({ matched_by: 'reference_id', changed_count: 1 });
    expect(dec2.compared_with[0]!.changes[0]).toMatchObject({
      change: 'changed',
      before: { recipient: 'mallory+new@evil.example' },
      after: { recipient: 'e3@ex.com' },
    });
    // What changed since the approved November is still flagged after the rejection.
    const flags = (ref: string) => dec2.payouts.find((p) => p.reference_id === ref)!.attention;
    expect(flags('DEC-5')).toContain(
      `was EUR 8,000.00 to e5@ex.com (NOV-5 in ${nov.prepared_run_id})`,
    );
    expect(flags('DEC-3')).toContain(
      `recipient changed: was mallory+new@evil.example, now e3@ex.com (in ${dec.prepared_run_id})`,
    );
    // A dry run says the send would be refused, and why.
    const dry = await run(anaHome, ana, ['send', fixed, '--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.stderr).toMatch(
      new RegExp(
        `Approval: +needed: run ${dec2.prepared_run_id} awaits another person's approval \\(the send will be refused\\)`,
      ),
    );
    expect(dry.stderr).toMatch(/New recipients: none/);
    const dryJson = await run(anaHome, ana, ['send', fixed, '--dry-run', '--json']);
    expect(parseJsonStdout<{ approval_status: unknown }>(dryJson).approval_status).toMatchObject({
      state: 'needed',
      prepared_run_id: dec2.prepared_run_id,
    });
    // The same file prepared twice is flagged.
    const again = await prepare(fixed);
    expect(again.duplicates).toEqual([
      { prepared_run_id: dec2.prepared_run_id, state: 'prepared' },
    ]);
    const third = await run(anaHome, ana, ['send', fixed, '--prepare']);
    expect(third.stderr).toContain(
      `warning: run ${again.prepared_run_id} (prepared) already holds exactly these payouts`,
    );

    // CI: prepare -> wait -> send, by exit codes alone.
    const codes: number[] = [];
    let last = await ci(dec2.prepared_run_id);
    codes.push(last.code);
    const ok = await run(bobHome, bob, ['approve', dec2.prepared_run_id, '--yes']);
    expect(ok.code).toBe(0);
    expect(ok.stderr).toMatch(
      /Against the rejected run p\w+ \(rejected by bob_\w+ at .* UTC: "DEC-3 goes/,
    );
    last = await ci(dec2.prepared_run_id);
    codes.push(last.code);
    expect(codes).toEqual([9, 0]);
    // A file changed after the approval is compared with the approved run, not the rejected one.
    const edited = month('DEC', '45000.00');
    edited[1] = ['DEC-2', '8000.01', 'e2@ex.com'];
    const late = await run(anaHome, ana, [
      'send',
      payroll(anaHome.dir, 'dec-edit.csv', edited),
      '--yes',
    ]);
    expect(late.code).toBe(9);
    expect(late.stderr).toContain(
      `differ from approved run ${dec2.prepared_run_id} (approved for ${fixed}): DEC-2: EUR 8,000.01 to e2@ex.com here, EUR 8,000.00 to e2@ex.com approved`,
    );
    expect(svc.held.get('DEC-3')).toBeDefined();
    expect([...svc.held.keys()].filter((k) => k.startsWith('DEC')).length).toBe(5);
    expect(svc.appliedTwice()).toEqual([]);

    // The record stays true: Bob's re-run sends nothing and does not become the sender.
    const rerun = await ci(dec2.prepared_run_id, bob);
    expect(rerun.code).toBe(0);
    const listed = parseJsonStdout<{
      runs: Array<{ run_id: string; sent_by: { db_user: string | null } }>;
      prepared_runs: Array<{ prepared_run_id: string; state: string }>;
    }>(await run(bobHome, bob, ['runs', '--json']));
    const decRun = listed.runs.find((r) => r.run_id === last.doc.run_id)!;
    expect(decRun.sent_by.db_user).toMatch(/^ana_/);
    const decPrep = listed.prepared_runs.find((r) => r.prepared_run_id === dec2.prepared_run_id);
    expect(decPrep!.state).toBe('sent');
    // The rejected run's record is as Bob rejected it, though its corrected twin is sent: the
    // comparison he saw is kept, and its row to mallory never reads "sent earlier".
    const rejectedNow = parseJsonStdout<PreparedDoc>(
      await run(bobHome, bob, ['runs', 'show', dec.prepared_run_id, '--json']),
    );
    expect(rejectedNow.reviews).toEqual(asRejected.reviews);
    const mallory = rejectedNow.payouts.find((p) => p.reference_id === 'DEC-3')!.attention;
    expect(mallory).not.toContain('sent earlier');
    expect(mallory.join('; ')).toMatch(
      /its reference_id is another payout's: EUR 8,000\.00 to e3@ex\.com \(run [0-9a-f]{16}\); not this payout/,
    );
    expect(rejectedNow.earlier).toMatchObject({ sent_count: 4, other_count: 1 });
    const record = await run(bobHome, bob, ['runs', 'show', dec.prepared_run_id], {
      terminal: { columns: 200 },
    });
    expect(record.stdout).toMatch(
      /^As reviewed by role bob_\w+ \(.*\) at .* UTC, who rejected it: "DEC-3 goes to a new address: check it with e3":$/m,
    );
    expect(record.stdout).toMatch(/^ {4}recipient changed: DEC-3 EUR 8,000\.00: was e3@ex\.com/m);
    expect(record.stdout).toMatch(
      /^Now:\n {2}Sent earlier: +4 sent, .*1 under a reference_id that is another payout's/m,
    );
    expect(record.stdout).toMatch(
      /^row +reference_id +amount +currency +recipient +as reviewed +now$/m,
    );
    const after = await run(bobHome, bob, ['runs', 'show', dec2.prepared_run_id, '--json']);
    expect(parseJsonStdout<PreparedDoc>(after).earlier).toEqual(
      expect.objectContaining({ sent_count: 5, to_send_count: 0 }),
    );
  });

  it('two approvers: both named on the Approval: line, in the comparison, each review kept', async () => {
    const { admin, home, env } = await ruled(undefined, ['--approvers', '2']);
    const run = (url: string, args: string[]) => runMain(args, { env: env(url) });
    const { ana, bob } = await teamRoles(admin);
    const { bob: carol } = await teamRoles(admin);
    const jan = payroll(home.dir, 'jan.csv', month('JAN', '8000.00'));
    const prep = parseJsonStdout<PreparedDoc>(await run(ana, ['send', jan, '--prepare', '--json']));
    const first = await run(bob, ['approve', prep.prepared_run_id, '--yes']);
    expect(first.stdout).toMatch(/1 of 2 approvals/);
    expect((await run(carol, ['approve', prep.prepared_run_id, '--yes'])).code).toBe(0);
    const dry = await run(ana, ['send', jan, '--dry-run']);
    expect(dry.stderr).toMatch(
      new RegExp(
        `^Approval: +approved: ${prep.prepared_run_id} by bob_\\w+ at \\d\\d:\\d\\d and bob_\\w+ at \\d\\d:\\d\\d$`,
        'm',
      ),
    );
    const roles = [bob, carol].map((u) => new URL(u).username);
    expect(dry.stderr).toContain(`by ${roles[0]} at`);
    expect(dry.stderr).toContain(`and ${roles[1]} at`);
    expect((await run(ana, ['send', jan, '--yes'])).code).toBe(0);
    // Each decision keeps the screen it was made on; the next month names both approvers.
    const shown = parseJsonStdout<PreparedDoc>(
      await run(bob, ['runs', 'show', prep.prepared_run_id, '--json']),
    );
    expect(shown.reviews.map((r) => r.decision)).toEqual(['approved', 'approved']);
    const record = await run(bob, ['runs', 'show', prep.prepared_run_id]);
    for (const role of roles)
      expect(record.stderr).toMatch(
        new RegExp(`^As reviewed by role ${role} .*, who approved it:$`, 'm'),
      );
    const febFile = payroll(home.dir, 'feb.csv', month('FEB', '8000.00'));
    const feb = parseJsonStdout<PreparedDoc>(
      await run(ana, ['send', febFile, '--prepare', '--json']),
    );
    expect(feb.compared_with[0]).toMatchObject({
      prepared_run_id: prep.prepared_run_id,
      series: { by: 'input_name', pattern: '<month>.csv' },
    });
    const screen = await run(carol, ['runs', 'show', feb.prepared_run_id]);
    expect(screen.stderr).toMatch(
      new RegExp(
        `^Against the last approved run ${prep.prepared_run_id} \\(sent; approved by ${roles[0]} at [^)]* and ${roles[1]} at [^)]*\\): 0 added, 0 removed, 0 changed, matched by recipient$`,
        'm',
      ),
    );
  });

  it('a summary names the rule: not needed below the threshold, not checked on a local history', async () => {
    const admin = await recycledDatabase();
    const svc = await fixture.start();
    const home = fixture.home();
    expect(
      (
        await runMain(['approvals', 'require', '--above', 'EUR=100.00'], {
          env: { ...svc.env(home.env), PAYOUTS_STATE_URL: admin },
        })
      ).code,
    ).toBe(0);
    const { ana } = await teamRoles(admin);
    const file = payroll(home.dir, 'small.csv', [['S-1', '12.00', 'x@ex.com']]);
    const shared = await runMain(['send', file, '--dry-run'], {
      env: { ...svc.env(home.env), PAYOUTS_STATE_URL: ana },
    });
    expect(shared.stderr).toMatch(
      /Approval: +not needed: EUR 12\.00 is not above the rule's threshold EUR 100\.00/,
    );
    // A person who has no team is not told on every run that no team's rule was checked
    // (issue 49); --json says it all the same.
    const local = await runMain(['send', file, '--yes'], { env: svc.env(home.env) });
    expect(local.code).toBe(0);
    expect(local.stderr).not.toContain('Approval:');
    expect(local.stderr).toMatch(
      /New recipients: all: this history has paid no one at this service yet \(EUR 12\.00\)/,
    );
    // Paid once, the recipient is not new any more.
    const next = payroll(home.dir, 'next.csv', [['S-2', '3.00', 'x@ex.com']]);
    const again = await runMain(['send', next, '--dry-run'], { env: svc.env(home.env) });
    expect(again.stderr).toMatch(/New recipients: none/);
    expect(again.stderr).not.toContain('Approval:');
    const doc = await runMain(['send', next, '--dry-run', '--json'], { env: svc.env(home.env) });
    expect(JSON.parse(doc.stdout).approval_status).toMatchObject({ state: 'not_checked' });
    // Once this folder's history went into the team's, a run from the folder goes around the
    // team's rule: that is said.
    // The URL on the command line without its password, which PGPASSWORD gives.
    const to = new URL(admin);
    const PGPASSWORD = decodeURIComponent(to.password);
    to.password = '';
    const push = await runMain(['state', 'push', '--to', to.toString()], {
      env: { ...svc.env(home.env), PGPASSWORD },
    });
    expect(push.code, push.stderr).toBe(0);
    const after = await runMain(['send', next, '--dry-run'], { env: svc.env(home.env) });
    expect(after.stderr).toMatch(
      /^Approval: +not checked: this history is local, and was copied into a shared one \(state push\), where the team's rule lives: send with PAYOUTS_STATE_URL$/m,
    );
  });

  it("a clerk's profile: the base URL without a secret, the history checked alone, --prepare", async () => {
    const admin = await recycledDatabase();
    const svc = await fixture.start();
    const home = fixture.home();
    const owner = { ...svc.env(home.env), PAYOUTS_STATE_URL: admin };
    expect((await runMain(['approvals', 'require'], { env: owner })).code).toBe(0);
    const { ana } = await teamRoles(admin);
    // No credentials, no base URL in the environment: only what the profile stores.
    const clerk = { ...home.env, PAYOUTS_STATE_URL: ana };
    const set = await runMain(['config', 'set', 'base_url', svc.url], { env: clerk });
    expect(set.code).toBe(0);
    const check = await runMain(['config', 'check'], { env: clerk });
    expect(check.code).toBe(0);
    expect(check.stdout).toMatch(/^Shared history reached at .*role ana_\w+/);
    expect(check.stdout).toMatch(/No credentials \(no Client-Id and Client-Secret .*not to send/);
    const file = payroll(home.dir, 'jan.csv', [['JAN-1', '1500.00', 'e1@ex.com']]);
    const prepared = await runMain(['send', file, '--prepare'], { env: clerk });
    expect(prepared.code).toBe(0);
    expect(prepared.stderr).toMatch(/Totals: +EUR 1,500\.00 +\(1 payout\)/);
    expect(prepared.stderr).toMatch(/Approval: +needed: another person approves this prepared run/);
    expect(prepared.stderr).toMatch(/until \d{4}-\d\d-\d\d \d\d:\d\d UTC/);
    expect(svc.creates).toBe(0);
  });

  it('a role not granted what it asks is told so in words, exit 2', async () => {
    const { admin, home, env } = await ruled();
    // A reader: it may look at the history, not prepare runs.
    const schema = schemaOf(admin);
    const name = `eve_${schema.slice(2, 10)}`;
    const { default: pg } = await import('pg');
    const c = new pg.Client({ connectionString: admin });
    await c.connect();
    await c.query(`CREATE ROLE ${name} LOGIN PASSWORD 'pw'`);
    await c.query(`GRANT USAGE ON SCHEMA ${schema} TO ${name}`);
    await c.query(`GRANT SELECT ON ALL TABLES IN SCHEMA ${schema} TO ${name}`);
    await c.end();
    const eve = new URL(admin);
    eve.username = name;
    eve.password = 'pw';
    const file = payroll(home.dir, 'apr.csv', [['APR-1', '10.00', 'x@ex.com']]);
    const r = await runMain(['send', file, '--prepare'], { env: env(eve.toString()) });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /does not let this role do that \(recording the prepared run: permission denied for table prepared_runs\)\. The role "\w+" has no grant for this: ask the owner of the history's tables \(role "postgres"\) to grant it, as docs\/approvals\.md/,
    );
  });

  it('an expired run is exit 11 for the approver and for CI, with when it expired', async () => {
    const { admin, svc, home, env } = await ruled();
    // A rule whose prepared runs expire at once (the client asks for 1 day at least).
    const { default: pg } = await import('pg');
    const c = new pg.Client({ connectionString: admin });
    await c.connect();
    await c.query(
      `INSERT INTO approval_rules (service_id, service, active, above, expires_days, set_by, at)
       SELECT service_id, service, 1, above, 0, '', '' FROM approval_rules LIMIT 1`,
    );
    await c.end();
    const { ana, bob } = await teamRoles(admin);
    const file = payroll(home.dir, 'mar.csv', [['MAR-1', '10.00', 'x@ex.com']]);
    const prep = parseJsonStdout<PreparedDoc>(
      await runMain(['send', file, '--prepare', '--json'], { env: env(ana) }),
    );
    const late = await runMain(['approve', prep.prepared_run_id, '--yes'], { env: env(bob) });
    expect(late.code).toBe(11);
    expect(late.stderr).toMatch(
      /expired at \d{4}-\d\d-\d\d \d\d:\d\d UTC: prepare the files again/,
    );
    const ci = await runMain(['send', '--approved', prep.prepared_run_id, '--yes', '--json'], {
      env: env(ana),
    });
    expect(ci.code).toBe(11);
    expect(parseJsonStdout<SendDoc>(ci).error?.approval).toMatchObject({
      state: 'expired',
      prepared_run_id: prep.prepared_run_id,
    });
    const plain = await runMain(['send', file, '--yes'], { env: env(ana) });
    expect(plain.code).toBe(11);
    expect(svc.creates).toBe(0);
  });

  it('a prepared run reads sending, then partly sent, while its run is unfinished', async () => {
    const { policy, posted: inFlight, release } = holdsFirst();
    const stop = new AbortController();
    const { admin, svc, home, env } = await ruled(policy);
    const { ana, bob } = await teamRoles(admin);
    const rows = month('FEB', '8000.00');
    const file = payroll(home.dir, 'feb.csv', rows);
    const prep = parseJsonStdout<PreparedDoc>(
      await runMain(['send', file, '--prepare', '--json'], { env: env(ana) }),
    ).prepared_run_id;
    expect((await runMain(['approve', prep, '--yes'], { env: env(bob) })).code).toBe(0);
    const state = async () =>
      parseJsonStdout<PreparedDoc>(
        await runMain(['runs', 'show', prep, '--json'], { env: env(bob) }),
      ).state;
    const sending = runMain(
      ['send', '--approved', prep, '--yes', '--chunk-size', '2', '--concurrency', '1'],
      { env: env(ana), clock: new FakeClock(), interrupt: stop.signal },
    );
    await inFlight;
    expect(await state()).toBe('sending');
    // Stopped after its first request: the rest is not sent.
    stop.abort();
    release();
    expect((await sending).code).toBe(130);
    expect(svc.held.size).toBe(2);
    expect(await state()).toBe('partly sent');
  });

  it("a comparison names 10 changes, --all every one; a 2-row file is of no payroll's series", async () => {
    const { admin, home, env } = await ruled();
    const { ana, bob } = await teamRoles(admin);
    const rows = (tag: string, amount: (i: number) => string) =>
      Array.from({ length: 12 }, (_, i): [string, string, string] => [
        `${tag}-${i + 1}`,
        amount(i),
        `p${i + 1}@ex.com`,
      ]);
    const prepare = async (name: string, r: Array<[string, string, string]>) =>
      parseJsonStdout<PreparedDoc>(
        await runMain(['send', payroll(home.dir, name, r), '--prepare', '--json'], {
          env: env(ana),
        }),
      ).prepared_run_id;
    const mar = await prepare(
      'mar.csv',
      rows('MAR', () => '100.00'),
    );
    expect((await runMain(['approve', mar, '--yes'], { env: env(bob) })).code).toBe(0);
    const apr = await prepare(
      'apr.csv',
      rows('APR', (i) => `${101 + i}.00`),
    );
    const shown = await runMain(['runs', 'show', apr], { env: env(bob) });
    const changed = (text: string) => text.split('\n').filter((l) => /^ {2}changed: /.test(l));
    expect(changed(shown.stderr)).toHaveLength(10);
    expect(shown.stderr).toMatch(/^ {2}and 2 more \(--all lists them, as does --json\)$/m);
    const all = await runMain(['runs', 'show', apr, '--all'], { env: env(bob) });
    expect(changed(all.stderr)).toHaveLength(12);
    expect(all.stderr).not.toMatch(/ more \(--all/);
    // A 2-row retry-like file of other people is compared with neither month.
    const two = await prepare('fix.csv', [
      ['FIX-1', '5.00', 'x@ex.com'],
      ['FIX-2', '6.00', 'y@ex.com'],
    ]);
    const fix = await runMain(['runs', 'show', two], { env: env(bob) });
    expect(fix.stderr).toMatch(/^Compared: +no earlier approved or rejected run of this series$/m);
    expect(fix.stderr).not.toMatch(/ %\)/);
  });

  it('the screen counts the payout rows, pages past 50 rows, and is plain rows on a pipe', async () => {
    const { admin, home, env } = await ruled();
    const { ana, bob } = await teamRoles(admin);
    const rows = Array.from({ length: 60 }, (_, i): [string, string, string] => [
      `R-${i + 1}`,
      '10.00',
      `p${i + 1}@ex.com`,
    ]);
    const prep = parseJsonStdout<PreparedDoc>(
      await runMain(['send', payroll(home.dir, 'big.csv', rows), '--prepare', '--json'], {
        env: env(ana),
      }),
    ).prepared_run_id;
    const piped = await runMain(['runs', 'show', prep], { env: env(bob) });
    const lines = piped.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('row\treference_id\tamount\tcurrency\trecipient\tattention');
    expect(lines).toHaveLength(51);
    expect(piped.stderr).toMatch(/^10 more payouts: --all shows them/m);
    const all = await runMain(['runs', 'show', prep, '--all'], { env: env(bob) });
    expect(all.stdout.trimEnd().split('\n')).toHaveLength(61);
    // A header that claims other figures than its rows (issue 39) does not reach the screen.
    const forged = await forge(ana, prep);
    if (forged.ok) {
      const shown = parseJsonStdout<PreparedDoc>(
        await runMain(['runs', 'show', forged.prep, '--json'], { env: env(bob) }),
      );
      expect(shown.payout_count).toBe(60);
      expect(shown.totals.EUR!.total).toBe('600.00');
    } else {
      expect(forged.error).toMatch(/./);
    }
  });
});

/** Records, as `url`'s role, a copy of prepared run `prep` whose header claims 1 payout of EUR 1.00. */
async function forge(
  url: string,
  prep: string,
): Promise<{ ok: true; prep: string } | { ok: false; error: string }> {
  const { default: pg } = await import('pg');
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  const id = 'p0000000000f0a9e';
  try {
    await c.query('BEGIN');
    const r = await c.query<{ id: number }>(
      `INSERT INTO prepared_runs (prep_id, service_id, service, inputs, content_hash, payout_count,
         totals, batch_reference, webhook_url, note, prepared_by, os_user, host, created_at, expires_at)
       SELECT $1, service_id, service, inputs, content_hash, 1, '{"EUR":{"count":1,"total":"1.00"}}',
         batch_reference, webhook_url, note, '', os_user, host, '', ''
       FROM prepared_runs WHERE prep_id = $2 RETURNING id`,
      [id, prep],
    );
    await c.query(
      `INSERT INTO prepared_payouts (prep, row, reference_id, amount, currency, recipient, description, hash)
       SELECT $1, x.row, x.reference_id, x.amount, x.currency, x.recipient, x.description, x.hash
       FROM prepared_payouts x JOIN prepared_runs p ON p.id = x.prep WHERE p.prep_id = $2`,
      [r.rows[0]!.id, prep],
    );
    await c.query('COMMIT');
    return { ok: true, prep: id };
  } catch (err) {
    await c.query('ROLLBACK').catch(() => {});
    return { ok: false, error: (err as Error).message };
  } finally {
    await c.end();
  }
}
