import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ledgerPerTest } from '../helpers/ledger-service.js';
import { FakeClock, runMain } from '../helpers/main.js';

// Issue 42, item 4: one amount format for people, on a terminal and a pipe alike, and the
// grammar of one.

const fixture = ledgerPerTest();

/** A file of the given rows (reference, amount), in EUR. */
function file(dir: string, rows: Array<[string, string]>): string {
  const path = join(dir, 'run.csv');
  const lines = rows.map(
    ([ref, amount]) => `${ref},${amount},EUR,${ref.toLowerCase()}@example.com`,
  );
  writeFileSync(path, `reference_id,amount,currency,recipient\n${lines.join('\n')}\n`);
  return path;
}

describe('one payout', () => {
  it('is "1 payout" in the summary, the requests and the closing line', async () => {
    const svc = await fixture.start();
    const home = fixture.home();
    const path = file(home.dir, [['ONE-1', '75711.26']]);
    const env = svc.env(home.env);
    const dry = await runMain(['send', path, '--dry-run', '--chunk-size', '1'], { env });
    expect(dry.code).toBe(0);
    expect(dry.stderr).toMatch(/^Totals:\s+EUR 75,711\.26 {2}\(1 payout\)$/m);
    expect(dry.stderr).toMatch(/^To send now:\s+the payout$/m);
    expect(dry.stderr).toMatch(/^Requests:\s+1 \(up to 1 payout each,/m);
    const sent = await runMain(['send', path, '--yes'], { env, clock: new FakeClock() });
    expect(sent.code).toBe(0);
    expect(sent.stderr).toMatch(/^1 payout: 1 succeeded, 0 failed, 0 pending/m);
    const all = `${dry.stdout}${dry.stderr}${sent.stdout}${sent.stderr}`;
    expect(all).not.toMatch(/\b1 payouts\b|payout\(s\)|\b1 requests\b/);
  });
});

describe('amounts', () => {
  it('read "EUR 75,711.26" for people on a pipe too; the table rows on a pipe stay plain', async () => {
    const svc = await fixture.start();
    const home = fixture.home();
    const path = file(home.dir, [
      ['AMT-1', '75000.00'],
      ['AMT-2', '711.26'],
    ]);
    const r = await runMain(['send', path, '--yes', '--all'], {
      env: svc.env(home.env),
      clock: new FakeClock(),
    });
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/^Totals:\s+EUR 75,711\.26 {2}\(2 payouts\)$/m);
    // The TSV rows: code first as everywhere, digits plain for a program.
    expect(r.stdout).toContain('\tEUR 75000.00\t');
    expect(r.stdout).not.toMatch(/\d EUR\b/);
    // NO_COLOR keeps the spinner off this fake terminal.
    const terminal = await runMain(['status', 'AMT-1', 'AMT-2'], {
      env: { ...svc.env(home.env), NO_COLOR: '1' },
      terminal: { columns: 120 },
    });
    expect(terminal.stdout, terminal.stderr).toContain('EUR 75,000.00');
    expect(terminal.stdout).not.toMatch(/\d EUR\b/);
  });
});

describe('--report-delimiter', () => {
  it('writes the report with ";" for a comma-decimal Excel, and status reads it back', async () => {
    const svc = await fixture.start();
    const home = fixture.home();
    const path = file(home.dir, [
      ['SEMI-1', '1234.50'],
      ['SEMI-2', '7.25'],
    ]);
    const report = join(home.dir, 'report.csv');
    const env = svc.env(home.env);
    const args = ['send', path, '--yes', '--report', report, '--report-delimiter', ';'];
    expect((await runMain(args, { env, clock: new FakeClock() })).code).toBe(0);
    const lines = readFileSync(report, 'utf8')
      .replace(/^\ufeff/, '')
      .split('\r\n');
    expect(lines[0]).toBe(
      'file;line;reference_id;amount;currency;recipient;description;status;transaction_id;charges;message;sent_earlier;retried_as',
    );
    // Amounts stay exact: "." is never the delimiter, and a cell holding ";" is quoted.
    expect(lines[1]).toMatch(/;SEMI-1;1234\.50;EUR;semi-1@example\.com;;success;/);
    const status = await runMain(['status', '--from', report], { env });
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain('SEMI-2');
    const bad = await runMain([...args, '--report-delimiter', '|'], { env });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--report-delimiter "|" is not supported: use ",", ";" or "tab"');
  });
});

describe("a resumed send's live line", () => {
  it('counts what this run sends, not the payouts sent earlier', async () => {
    // The second run's last request is held until the spinner has drawn its count.
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    const svc = await fixture.start((n) => (n === 3 ? { hold: held } : {}));
    const home = fixture.home();
    const env = svc.env(home.env);
    const first = [
      ['LIVE-1', '1.00'],
      ['LIVE-2', '2.00'],
      ['LIVE-3', '3.00'],
      ['LIVE-4', '4.00'],
    ] as Array<[string, string]>;
    expect((await runMain(['send', file(home.dir, first), '--yes'], { env })).code).toBe(0);
    const both = file(home.dir, [...first, ['LIVE-5', '5.00'], ['LIVE-6', '6.00']]);
    const r = await runMain(['send', both, '--yes', '--chunk-size', '1', '--concurrency', '1'], {
      env,
      terminal: { columns: 120 },
      onStderr: (text) => {
        if (/Sending: \d\/\d+ payouts done/.test(text)) release();
      },
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/Sending: \d\/2 payouts done/);
    expect(r.stderr).not.toMatch(/Sending: \d\/6 payouts done/);
  });
});
