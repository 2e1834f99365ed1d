import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ledgerPerTest } from '../helpers/ledger-service.js';
import { FakeClock, type MainOptions, runMain } from '../helpers/main.js';
import { recycledDatabase, teamRoles } from '../helpers/pg.js';

// Issue 49, item 5: every word of a send true, and its grammar that of one payout or many.

const fixture = ledgerPerTest();

/** A CSV file of rows (reference, amount, recipient), in EUR. */
function csv(dir: string, name: string, rows: Array<[string, string, string]>): string {
  const path = join(dir, name);
  const lines = rows.map(([ref, amount, to]) => `${ref},${amount},EUR,${to}`);
  writeFileSync(path, `reference_id,amount,currency,recipient\n${lines.join('\n')}\n`);
  return path;
}

describe('the grammar of one payout', () => {
  it('one pending payout is watched as "it", two as "them"', async () => {
    const home = fixture.home();
    const one = csv(home.dir, 'one.csv', [['W-1', '5.00', 'w1+pending@example.com']]);
    const r = await runMain(['send', one, '--sandbox'], { env: home.env, clock: new FakeClock() });
    expect(r.code, r.stderr).toBe(5);
    expect(r.stderr).toContain(
      '1 payout is not final yet; to watch it until it is: payouts status W-1 --watch --sandbox',
    );
    expect(r.stderr).not.toContain('until they are');
    const two = csv(home.dir, 'two.csv', [
      ['W-2', '5.00', 'w2+pending@example.com'],
      ['W-3', '6.00', 'w3+pending@example.com'],
    ]);
    const r2 = await runMain(['send', two, '--sandbox'], { env: home.env, clock: new FakeClock() });
    expect(r2.stderr).toContain(
      '2 payouts are not final yet; to watch them until they are: payouts status W-2 W-3 --watch --sandbox',
    );
  });

  it('the summary of a file of one payout says "To send now: the payout"', async () => {
    const home = fixture.home();
    const one = csv(home.dir, 'one.csv', [['G-1', '5.00', 'g1@example.com']]);
    const r = await runMain(['send', one, '--dry-run'], { env: home.env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/^To send now: +the payout$/m);
    expect(r.stderr).not.toContain('the one payout');
  });
});

describe('the charges of a payout paid by its retry', () => {
  it('are its retry\'s recorded charges, not "unknown"', async () => {
    const home = fixture.home();
    const run = (args: string[]) =>
      runMain([...args, '--sandbox'], { env: home.env, clock: new FakeClock() });
    const nov = csv(home.dir, 'nov.csv', [
      ['C-1', '10.00', 'c1+failed@example.com'],
      ['C-2', '11.00', 'c2@example.com'],
    ]);
    expect((await run(['send', nov])).code).toBe(4);
    // The failed payout is retried under C-1-R1, to a recipient the sandbox pays.
    const retry = join(home.dir, 'retry.csv');
    writeFileSync(
      retry,
      'reference_id,new_reference_id,amount,currency,recipient\nC-1,C-1-R1,10.00,EUR,c1@example.com\n',
    );
    expect((await run(['send', retry])).code).toBe(0);
    const again = await run(['send', nov]);
    expect(again.code, again.stderr).toBe(0);
    // C-2's 0.11 and C-1-R1's 0.10: every charge is recorded.
    expect(again.stderr).toMatch(/charges EUR 0\.21$/m);
    expect(again.stderr).not.toContain('unknown charges');
    const doc = JSON.parse((await run(['send', nov, '--json'])).stdout);
    expect(doc.charges).toEqual({ EUR: '0.21' });
    expect(doc.charges_unknown_count).toBe(0);
    const c1 = doc.results.find((x: { reference_id: string }) => x.reference_id === 'C-1');
    // Its own status kept, paid by its retry (docs/history.md#a-failed-payout-that-its-retry-paid).
    expect(c1).toMatchObject({
      status: 'failed',
      paid_by_retry: true,
      retried_as: { reference_id: 'C-1-R1', status: 'success' },
      charges: '0.10',
      sent_earlier: true,
    });
  });
});

describe('the send command a next step names', () => {
  it('repeats the flags a German export needs, after --prepare and approve, and it runs', async () => {
    const admin = await recycledDatabase();
    const svc = await fixture.start();
    const [anaHome, bobHome] = [fixture.home(), fixture.home()];
    const run = (home: typeof anaHome, url: string, args: string[], opts: MainOptions = {}) =>
      runMain(args, {
        env: { ...svc.env(home.env), PAYOUTS_STATE_URL: url },
        clock: new FakeClock(),
        ...opts,
      });
    expect((await run(anaHome, admin, ['approvals', 'require'])).code).toBe(0);
    const { ana, bob } = await teamRoles(admin);
    // Windows-1252, ";" and decimal commas, German column names: read only with three flags.
    const file = join(anaHome.dir, 'dez.csv');
    const text = [
      'Referenz;Betrag;currency;recipient;description',
      'DEZ-1;3.061,76;EUR;felix@example.com;Gehalt Dezember Felix Höß',
      'DEZ-2;2.500,00;EUR;jana@example.com;Gehalt Dezember Jana',
    ].join('\r\n');
    writeFileSync(file, Buffer.from(`${text}\r\n`, 'latin1'));
    const flags = [
      '--encoding',
      'windows-1252',
      '--decimal-comma',
      '--map',
      'reference_id=Referenz,amount=Betrag',
    ];
    const typed = `${file} --encoding windows-1252 --decimal-comma --map reference_id=Referenz,amount=Betrag`;

    // Refused for want of approval: the command that prepares it reads the file as this did.
    const plain = await run(anaHome, ana, ['send', file, ...flags, '--yes']);
    expect(plain.code, plain.stderr).toBe(9);
    expect(plain.stderr).toContain(`Prepare them with \`payouts send ${typed} --prepare\``);

    const prepared = await run(anaHome, ana, ['send', file, ...flags, '--prepare']);
    expect(prepared.code, prepared.stderr).toBe(0);
    const prep = /^Prepared run (p[0-9a-f]{15})/m.exec(prepared.stdout)?.[1];
    expect(prep).toBeDefined();
    expect(prepared.stderr).toContain(
      `then \`payouts send ${typed}\` or \`payouts send --approved ${prep}\` sends it`,
    );

    const approved = await run(bobHome, bob, ['approve', prep!, '--yes']);
    expect(approved.code, approved.stderr).toBe(0);
    const said = /`payouts send ([^`]*)` \(the same payouts\)/.exec(approved.stdout)?.[1];
    expect(said).toBe(typed);
    // The command as approve printed it sends the approved payouts.
    const sent = await run(anaHome, ana, ['send', ...said!.split(' '), '--yes']);
    expect(sent.code, sent.stderr).toBe(0);
    expect(sent.stderr).toMatch(/^2 payouts: 2 succeeded/m);
    expect(svc.held.get('DEZ-1')?.amount).toBe(3061.76);
    expect(svc.appliedTwice()).toEqual([]);
  });
});

describe('a service that answers nothing', () => {
  it('is told its cause once: the read-back that met it too says "for the same reason"', async () => {
    const svc = await fixture.start(() => ({ hold: new Promise(() => {}) }));
    svc.onGet = () => true;
    const home = fixture.home();
    const file = csv(home.dir, 'run.csv', [['Q-1', '5.00', 'q1@example.com']]);
    const r = await runMain(['send', file, '--yes'], {
      env: { ...svc.env(home.env), PAYOUTS_TIMEOUT: '0.2' },
      clock: new FakeClock(),
    });
    expect(r.code, r.stderr).toBe(7);
    expect(r.stderr).toMatch(
      /^warning: no (complete )?answer from 127\.0\.0\.1:\d+ within 0\.[23] s \(timed out\); the request may have been applied: reading 1 payout back before deciding anything$/m,
    );
    expect(r.stderr).toMatch(/^warning: could not read back 1 payout, for the same reason$/m);
    // The warning, then the error that ends the run: not once more for each lookup.
    expect(r.stderr.match(/answer from/g)).toHaveLength(2);
    expect(r.stdout).toMatch(
      /outcome unknown: no (complete )?answer from 127\.0\.0\.1:\d+ within 0\.[23] s \(timed out\); the request may have been applied; not read back, for the same reason/,
    );
  });
});
