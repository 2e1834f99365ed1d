import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fixture, parseJsonStdout, sample, tempHome, writeCsv } from '../helpers/cli.js';
import { runsOnFakeClock } from '../helpers/main.js';
import { doubleSends, testService } from '../helpers/sandbox.js';
import type { SendDoc } from '../../src/core/documents.js';

// `payouts send` run in this process; a reader that closes stdout early needs a real pipe:
// test/e2e/send.test.ts.

let service: Awaited<ReturnType<typeof testService>> | undefined;
afterEach(async () => {
  await service?.close();
  service = undefined;
});

/** Runs `payouts ARGS` in process on the test's own clock. */
const run = runsOnFakeClock();

describe('payouts send: spreadsheet exports', () => {
  it('sends a BOM + CRLF export with quoted delimiters, quotes, non-ASCII and 0/2/3-decimal currencies exactly', async () => {
    service = await testService();
    const r = await run(['send', fixture('send', 'excel-bom-crlf.csv'), '--yes', '--json'], {
      env: service.env,
    });
    expect(r.stderr).not.toMatch(/\x1b\[/);
    expect(r.code).toBe(0);
    const doc = parseJsonStdout<SendDoc>(r);
    expect(doc.success_count).toBe(4);
    expect(doc.results.map((x) => x.reference_id)).toEqual([
      'XL-001',
      'XL-002',
      'XL-003',
      'XL-004',
    ]);
    expect(r.stdout).toContain('"amount": "1250.00"');
    expect(r.stdout).toContain('"amount": "125.500"');
    const ledger = await service.ledger();
    expect(ledger.get('XL-002')).toMatchObject({
      amount: '48000',
      currency: 'JPY',
      recipient: '+819012345678',
    });
    expect(ledger.get('XL-003')).toMatchObject({ amount: '125.5', currency: 'BHD' });
    expect(ledger.get('XL-004')).toMatchObject({
      amount: '0.1',
      currency: 'USD',
      recipient: 'zoë@example.com',
    });
    expect(doubleSends(ledger)).toEqual([]);
  });

  it('reads semicolon-separated files with odd header case, extra columns (one warning) and blank lines', async () => {
    service = await testService();
    const r = await run(['send', fixture('send', 'semicolons.csv'), '--yes'], {
      env: service.env,
    });
    expect(r.code).toBe(0);
    expect(r.stderr.match(/warning:.*Cost Center/gi)).toHaveLength(1);
    expect(r.stderr).toMatch(/3 payouts: 3 succeeded, 0 failed, 0 pending/);
    expect((await service.ledger()).get('SEMI-3')).toMatchObject({
      amount: '7.25',
      currency: 'KWD',
    });
  });
});

describe('payouts send: validation lists every problem and sends nothing', () => {
  it('names file, line, field and value for each problem, exits 2, and makes no request', async () => {
    service = await testService();
    const r = await run(['send', fixture('send', 'problems.csv'), '--yes'], {
      env: service.env,
    });
    expect(r.code).toBe(2);
    const err = r.stderr;
    expect(err).toMatch(/problems\.csv line 2: amount "1,234\.56": .*thousands separators/);
    expect(err).toMatch(/problems\.csv line 3: amount "10\.005": .*at most 2 decimals/);
    expect(err).toMatch(/problems\.csv line 4: amount "100\.5": .*whole number/);
    expect(err).toMatch(/problems\.csv line 5: currency "XYZ"/);
    expect(err).toMatch(/problems\.csv line 6: recipient/);
    expect(err).toMatch(/problems\.csv line 7: reference_id/);
    expect(err).toMatch(/problems\.csv line 8: amount "-3": must be greater than 0/);
    expect(err).toMatch(/problems\.csv line 9: reference_id "P-1": is used on lines 2 and 9: /);
    expect(err).toMatch(/problems\.csv line 10: .*fields/);
    expect(service.sandbox.requestCounts()).toEqual({ create: 0, status: 0 });
  });

  it('checks reference_id uniqueness across all files of the run', async () => {
    service = await testService();
    const r = await run(
      ['send', fixture('send', 'excel-bom-crlf.csv'), fixture('send', 'second.csv'), '--yes'],
      {
        env: service.env,
      },
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /second\.csv line 3: reference_id "XL-001": is used on \S*excel-bom-crlf\.csv line 2 and \S*second\.csv line 3: /,
    );
    expect(service.sandbox.requestCounts().create).toBe(0);
  });

  it('lists the first 50 problems, then a count of the rest', async () => {
    service = await testService();
    const home = service.home;
    const file = writeCsv(
      join(home.dir, 'sixty.csv'),
      'reference_id,amount,currency,recipient',
      60,
      (n) => `R${n - 1},-1,USD,x@example.com`,
    );
    const r = await run(['send', file, '--yes', '--json'], { env: service.env });
    expect(r.code).toBe(2);
    expect(r.stderr.match(/sixty\.csv line \d+: amount/g)).toHaveLength(50);
    expect(r.stderr).toContain('and 10 more problems');
    const doc = parseJsonStdout<{ error: { problem_count: number } }>(r);
    expect(doc.error.problem_count).toBe(60);
  });

  it('refuses a run above --max-total before sending', async () => {
    service = await testService();
    const r = await run(['send', sample('payouts.csv'), '--yes', '--max-total', 'EUR=2870.49'], {
      env: service.env,
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/this run would send EUR 2,870\.50, above the limit of EUR 2,870\.49/);
    expect(service.sandbox.requestCounts().create).toBe(0);
    const ok = await run(['send', sample('payouts.csv'), '--yes', '--max-total', 'EUR=2870.50'], {
      env: service.env,
    });
    expect(ok.code).toBe(0);
  });
});

describe('payouts send: confirmation and dry run', () => {
  it('without a terminal requires --yes and sends nothing', async () => {
    service = await testService();
    const r = await run(['send', sample('payouts.csv')], { env: service.env });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/pass --yes/);
    expect(service.sandbox.requestCounts().create).toBe(0);
  });

  it('--dry-run --json prints the summary document and needs no credentials', async () => {
    const home = tempHome();
    try {
      const r = await run(
        ['send', sample('payouts.csv'), '--dry-run', '--json', '--chunk-size', '5'],
        { env: home.env },
      );
      expect(r.code).toBe(0);
      const doc = parseJsonStdout<{
        dry_run: boolean;
        payout_count: number;
        totals: Record<string, { count: number; total: string }>;
        request_count: number;
        first_request: { payouts: unknown[] };
      }>(r);
      expect(doc.dry_run).toBe(true);
      expect(doc.payout_count).toBe(12);
      expect(doc.request_count).toBe(3);
      expect(doc.totals).toEqual({
        BHD: { count: 1, total: '125.500' },
        CHF: { count: 1, total: '3200.00' },
        EUR: { count: 3, total: '2870.50' },
        GBP: { count: 2, total: '2330.30' },
        JPY: { count: 2, total: '60500' },
        USD: { count: 3, total: '2815.74' },
      });
      expect(doc.first_request.payouts).toHaveLength(5);
      expect(r.stdout).toContain('"amount": 1250.00');
    } finally {
      home.cleanup();
    }
  });

  it('--dry-run in human form shows totals, requests and service as not set on stderr, like a send', async () => {
    const home = tempHome();
    try {
      const r = await run(
        ['send', sample('payouts.csv'), '--dry-run', '--batch-reference', 'NOV-1'],
        { env: home.env },
      );
      expect(r.code).toBe(0);
      expect(r.stderr).toMatch(/Payouts:\s+12/);
      expect(r.stderr).toMatch(/EUR 2,870\.50\s+\(3 payouts\)/);
      expect(r.stderr).toMatch(/Service:\s+\(not set\)/);
      expect(r.stderr).toMatch(/Batch:\s+NOV-1/);
      expect(r.stderr).toContain('Dry run: nothing was sent');
      // The request goes to stdout only when asked for.
      expect(r.stdout).toBe('');
    } finally {
      home.cleanup();
    }
  });

  it('--dry-run --show-request prints the first request body alone on stdout', async () => {
    const home = tempHome();
    try {
      const r = await run(['send', sample('payouts.csv'), '--dry-run', '--show-request'], {
        env: home.env,
      });
      expect(r.code).toBe(0);
      expect(r.stderr).toMatch(/Payouts:\s+12/);
      expect(r.stdout).not.toContain('Payouts:');
      expect(JSON.parse(r.stdout).payouts).toHaveLength(12);
      expect(r.stdout).toContain('{"amount":1250.00,"currency":"EUR"');
      const without = await run(['send', sample('payouts.csv'), '--show-request'], {
        env: home.env,
      });
      expect(without.code).toBe(2);
      expect(without.stderr).toContain('--show-request applies only with --dry-run');
    } finally {
      home.cleanup();
    }
  });
});

describe('payouts send: requests and results', () => {
  it('chunks requests and carries the batch reference and webhook override on each', async () => {
    service = await testService();
    const r = await run(
      [
        'send',
        sample('payouts.csv'),
        '--yes',
        '--json',
        '--chunk-size',
        '5',
        '--concurrency',
        '2',
        '--batch-reference',
        'BATCH-42',
        '--webhook-url',
        'http://127.0.0.1:9/hook',
      ],
      { env: service.env },
    );
    expect(r.code).toBe(0);
    expect(service.sandbox.requestCounts().create).toBe(3);
    const doc = parseJsonStdout<SendDoc>(r);
    expect(doc.batch_reference).toBe('BATCH-42');
    expect(doc.success_count).toBe(12);
  });

  it('reports failed, canceled and pending results, coloured statuses off without a terminal, exit 4', async () => {
    service = await testService();
    const r = await run(['send', fixture('send', 'triggers.csv'), '--yes'], {
      env: service.env,
    });
    expect(r.code).toBe(4);
    expect(r.stdout).not.toMatch(/\x1b\[/);
    expect(r.stderr).toMatch(/4 payouts: 1 succeeded, 1 failed, 1 canceled, 1 pending/);
    // Rows needing attention come first.
    const order = ['TR-FAIL-1', 'TR-PEND-1', 'TR-CANC-1', 'TR-OK-1'].map((ref) =>
      r.stdout.indexOf(ref),
    );
    expect(order[3]).toBeGreaterThan(Math.max(order[0]!, order[1]!, order[2]!));
  });

  it('exits 5 when a payout is pending and none failed', async () => {
    service = await testService();
    const r = await run(['send', fixture('send', 'pending.csv'), '--yes', '--json'], {
      env: service.env,
    });
    expect(r.code).toBe(5);
    const doc = parseJsonStdout<SendDoc>(r);
    expect([doc.success_count, doc.failed_count, doc.pending_count]).toEqual([1, 0, 1]);
  });

  it('writes a formula-safe --report and a --failed-out file that is valid input', async () => {
    service = await testService();
    const report = join(service.home.dir, 'report.csv');
    const failed = join(service.home.dir, 'failed.csv');
    const r = await run(
      [
        'send',
        fixture('send', 'triggers.csv'),
        '--yes',
        '--report',
        report,
        '--failed-out',
        failed,
      ],
      {
        env: service.env,
      },
    );
    expect(r.code).toBe(4);
    const reportText = readFileSync(report, 'utf8');
    expect(reportText.startsWith('\ufeff')).toBe(true);
    const lines = reportText.slice(1).trim().split('\r\n');
    expect(lines[0]).toBe(
      'file,line,reference_id,amount,currency,recipient,description,status,transaction_id,charges,message,sent_earlier,retried_as',
    );
    expect(lines).toHaveLength(5);
    expect(readFileSync(report, 'utf8')).toContain(`"'=HYPERLINK(""http://x.invalid"")"`);
    expect(readFileSync(report, 'utf8')).toContain("'@SUM(A1)");
    expect(readFileSync(report, 'utf8')).toContain("'+4420+canceled");
    const failedText = readFileSync(failed, 'utf8');
    expect(failedText.split('\r\n')[0]).toBe(
      '\ufeffreference_id,new_reference_id,amount,currency,recipient,description',
    );
    expect(failedText).toContain('TR-FAIL-1,,20.00,USD,bob+failed@example.com');
    expect(failedText).not.toContain('TR-OK-1');
    expect(failedText).not.toContain('TR-PEND-1');
    const again = await run(['send', failed, '--dry-run', '--json'], { env: service.home.env });
    expect(again.code).toBe(0);
    expect(parseJsonStdout<{ payout_count: number }>(again).payout_count).toBe(2);
  });

  it('writes reports Excel reads as UTF-8 by their mark; --report-encoding utf8 writes plain UTF-8', async () => {
    service = await testService();
    const input = join(service.home.dir, 'umlaut.csv');
    writeFileSync(
      input,
      'reference_id,amount,currency,recipient\nUM-1,10.00,EUR,müller@example.com\n',
    );
    // As Excel on Windows opens a CSV: by its byte-order mark, else as Windows-1252.
    const excelReads = (path: string) => {
      const bytes = readFileSync(path);
      const marked = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf;
      return new TextDecoder(marked ? 'utf-8' : 'windows-1252').decode(bytes);
    };
    const excel = join(service.home.dir, 'excel.csv');
    const plain = join(service.home.dir, 'plain.csv');
    expect(
      (await run(['send', input, '--yes', '--report', excel], { env: service.env })).code,
    ).toBe(0);
    const again = ['send', input, '--yes', '--report', plain, '--report-encoding', 'utf8'];
    expect((await run(again, { env: service.env })).code).toBe(0);
    expect(excelReads(excel)).toContain('müller@example.com');
    expect(readFileSync(excel, 'utf8').split('\r\n')).toHaveLength(3);
    expect(excelReads(plain)).toContain('mÃ¼ller@example.com');
    expect(readFileSync(plain, 'utf8')).not.toContain('\r');
  });

  it('reads standard input with "-"', async () => {
    service = await testService();
    const r = await run(['send', '-', '--format', 'csv', '--yes', '--json'], {
      env: service.env,
      stdin: readFileSync(sample('payouts.csv'), 'utf8'),
    });
    expect(r.code).toBe(0);
    expect(parseJsonStdout<SendDoc>(r).success_count).toBe(12);
  });

  it('sends a JSON create request file, taking its batch_reference unless a flag overrides it', async () => {
    service = await testService();
    const r = await run(['send', sample('payouts.json'), '--yes', '--json'], {
      env: service.env,
    });
    expect(r.code).toBe(0);
    expect(parseJsonStdout<SendDoc>(r).batch_reference).toBe('NOV-2026-CONTRACTORS');
  });
});

describe('payouts send: inputs over 8 MiB', () => {
  it('sends a 9 MiB file, every payout exactly once and as read', async () => {
    service = await testService();
    // 750 bytes of three-byte characters a row: 12,000 rows make about 9 MiB, so reads of the
    // file split characters across chunks.
    const file = writeCsv(
      join(service.home.dir, 'over-8-mib.csv'),
      'reference_id,amount,currency,recipient,description',
      12_000,
      (i) => `BIG-${i},${i}.05,EUR,user${i}@example.com,${'✓'.repeat(249)}${i % 10}`,
    );
    const r = await run(['send', file, '--yes', '--json'], { env: service.env });
    expect(r.code).toBe(0);
    expect(parseJsonStdout<SendDoc>(r).success_count).toBe(12_000);
    const ledger = await service.ledger();
    expect(ledger.size).toBe(12_000);
    expect(doubleSends(ledger)).toEqual([]);
    expect(ledger.get('BIG-11997')).toMatchObject({
      amount: '11997.05',
      currency: 'EUR',
      recipient: 'user11997@example.com',
    });
    // Nothing the run kept aside is left behind (the folder exists only if something was).
    const tmp = join(service.home.dir, 'state', 'payouts', 'tmp');
    expect(existsSync(tmp) ? readdirSync(tmp) : []).toEqual([]);
  });
});
