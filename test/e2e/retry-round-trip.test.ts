import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { failsThese, ledgerPerTest } from '../helpers/ledger-service.js';
import { runMain } from '../helpers/main.js';
import { onTerminal, storeProfile } from '../helpers/terminal.js';

// Issue 35, as finance staff meet it at a terminal: a send with three failures, the failed
// rows written by `runs show --failed-out`, the unchanged file refused, the file with new
// references sent; each payout applied once. Issue 38: then never paid again under a
// second new reference, and the original file re-sent ends at exit 0. The first send is the
// built binary on a pseudo-terminal; the commands after it read what it left, in this process
// as at a terminal of 80 columns (a process each cost a second of the suite's time).

const fixture = ledgerPerTest();

/** The references the service fails. */
const FAILING = new Set(['NOV-02', 'NOV-05', 'NOV-09']);

const failSome = failsThese(FAILING);

describe('at a terminal: a failed payout retried in one step', () => {
  it('send, runs show --failed-out, the unchanged file refused, new references sent once', async () => {
    const svc = await fixture.start(failSome);
    const home = fixture.home();
    await storeProfile(home.env, svc.url);
    const env = { ...home.env, NO_COLOR: '1' };
    const file = join(home.dir, 'november.csv');
    const rows = Array.from(
      { length: 10 },
      (_, i) => `NOV-${String(i + 1).padStart(2, '0')},2.50,EUR,p${i + 1}@example.com`,
    );
    writeFileSync(file, `reference_id,amount,currency,recipient\n${rows.join('\n')}\n`);
    const one = ['--chunk-size', '1', '--concurrency', '1'];
    const confirm = [{ expect: '[y/N]' }, { send: 'y\r' }];
    /** A later command at a terminal, `typed` its keys: its code and all it printed. */
    const atTerminal = async (args: string[], typed = '') => {
      const r = await runMain(args, { env, terminal: { columns: 80 }, stdin: typed });
      return { code: r.code, output: r.stdout + r.stderr };
    };

    const sent = await onTerminal(['send', file, ...one], confirm, env);
    expect(sent.code).toBe(4);
    expect(sent.output).toMatch(/10 payouts: 7 succeeded, 3 failed/);
    const runId = /payouts runs show ([0-9a-f]{16}) --failed-out FILE/.exec(sent.output)?.[1];
    expect(runId).toBeDefined();

    const retry = join(home.dir, 'retry.csv');
    const written = await atTerminal(['runs', 'show', `${runId}`, '--failed-out', retry]);
    expect(written.code).toBe(0);
    expect(written.output).toContain(
      `3 failed or canceled payouts of run ${runId} written to ${retry} (","-separated, decimal point, UTF-8 with a byte-order mark): give each row a new reference_id in its new_reference_id column, then`,
    );
    expect(readFileSync(retry, 'utf8').split('\r\n')[0]).toBe(
      '\ufeffreference_id,new_reference_id,amount,currency,recipient,description',
    );
    const creates = svc.creates;

    const refused = await atTerminal(['send', retry, ...one]);
    expect(refused.code).toBe(2);
    expect(refused.output).toContain(
      'these 3 references already failed at the service: give them new reference_ids',
    );
    expect(refused.output).not.toContain('[y/N]');
    expect(refused.output).not.toContain('sent earlier');
    expect(svc.creates).toBe(creates);

    // As a person does in a spreadsheet: a new reference in each row's new_reference_id.
    writeFileSync(retry, readFileSync(retry, 'utf8').replace(/^(NOV-\d\d),,/gm, '$1,$1-r1,'));
    const resent = await atTerminal(['send', retry, ...one], 'y\n');
    expect(resent.output).toContain('Send 3 payouts (EUR 7.50)? They cannot be taken back.');
    expect(resent.code).toBe(0);
    expect(resent.output).toMatch(/3 payouts: 3 succeeded, 0 failed/);

    // Issue 38: the payouts a retry paid are one with it. A second --failed-out writes none
    // of them, a second retry of them is refused, and the original file sends nothing, exit 0.
    const second = join(home.dir, 'second.csv');
    const none = await atTerminal(['runs', 'show', `${runId}`, '--failed-out', second]);
    expect(none.output).toContain(
      '3 retried and paid (as NOV-02-r1, NOV-05-r1, NOV-09-r1), not written',
    );
    expect(readFileSync(second, 'utf8')).not.toContain('NOV-');
    writeFileSync(retry, readFileSync(retry, 'utf8').replace(/-r1,/g, '-r2,'));
    const again = await atTerminal(['send', retry, ...one]);
    expect(again.code).toBe(2);
    expect(again.output).toContain('already retried as "NOV-02-r1"');
    expect(again.output).not.toContain('[y/N]');
    const original = await atTerminal(['send', file, ...one]);
    expect(original.code).toBe(0);
    expect(original.output).toContain('retried: 3, paid as NOV-02-r1, NOV-05-r1, NOV-09-r1');

    // Each of the 13 references was applied once: the 10 of November and the 3 new ones.
    expect(svc.held.size).toBe(13);
    expect([...svc.held.values()].filter((h) => h.times !== 1)).toEqual([]);
    expect(svc.appliedTwice()).toEqual([]);
    for (const ref of FAILING) expect(svc.held.get(`${ref}-r1`)?.status).toBe('success');
  });
});
