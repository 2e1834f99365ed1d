import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fixture, parseJsonStdout, tempHome, writeCsv } from '../helpers/cli.js';
import { runsOnFakeClock } from '../helpers/main.js';
import { testService } from '../helpers/sandbox.js';

let service: Awaited<ReturnType<typeof testService>> | undefined;
afterEach(async () => {
  await service?.close();
  service = undefined;
});

/** Runs `payouts ARGS` in process on the test's own clock. */
const run = runsOnFakeClock();

describe('payouts send: input formats', () => {
  it('detects tab-separated files, and takes --delimiter tab', async () => {
    service = await testService();
    const detected = await run(['send', fixture('input', 'tab-separated.tsv'), '--yes', '--json'], {
      env: service.env,
    });
    expect(detected.code).toBe(0);
    expect((await service.ledger()).get('T-2')).toMatchObject({ amount: '6.1', currency: 'GBP' });
    const home = tempHome();
    try {
      const explicit = await run(
        [
          'send',
          fixture('input', 'tab-separated.tsv'),
          '--delimiter',
          'tab',
          '--dry-run',
          '--json',
        ],
        {
          env: home.env,
        },
      );
      expect(explicit.code).toBe(0);
    } finally {
      home.cleanup();
    }
  });

  it('names other headers with --map', async () => {
    service = await testService();
    const r = await run(
      [
        'send',
        fixture('input', 'mapped-headers.csv'),
        '--map',
        'reference_id=Ref,amount=Betrag,currency=Währung,recipient=Empfänger,description=Verwendungszweck',
        '--yes',
      ],
      { env: service.env },
    );
    expect(r.code).toBe(0);
    expect((await service.ledger()).get('B-1')).toMatchObject({
      amount: '10',
      currency: 'EUR',
      recipient: 'a@example.de',
    });
  });

  it('names a missing column and sends nothing', async () => {
    service = await testService();
    const r = await run(['send', fixture('input', 'missing-column.csv'), '--yes'], {
      env: service.env,
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/missing-column\.csv line 1: currency: column is missing/);
    expect(service.sandbox.requestCounts().create).toBe(0);
  });

  it('refuses a Windows-1252 export, saying it is not UTF-8, and sends nothing', async () => {
    service = await testService();
    const r = await run(['send', fixture('input', 'windows-1252.csv'), '--yes'], {
      env: service.env,
    });
    expect(r.code).toBe(2);
    // Read again as Windows-1252, it has no other problem: one message gives the command.
    expect(r.stderr).toMatch(
      /windows-1252\.csv: is Windows-1252 text \(Excel "CSV" on Windows\), not UTF-8\. Read with that flag, it has no other problem\. Run: payouts send \S+windows-1252\.csv --yes --encoding windows-1252\n/,
    );
    expect(r.stderr).toContain('error: 1 problem in the input');
    expect(service.sandbox.requestCounts().create).toBe(0);
  });

  it('a JSON file in Windows-1252 is not called an Excel CSV', async () => {
    const home = tempHome();
    try {
      const path = join(home.dir, 'run.json');
      const json =
        '[{"reference_id":"J-1","amount":"1.00","currency":"EUR","recipient":"a@ex.com","description":"Gebühr"}]';
      writeFileSync(path, Buffer.from(json, 'latin1'));
      const r = await run(['send', path, '--dry-run'], { env: home.env });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('run.json: is Windows-1252 text, not UTF-8. Read with that flag');
      expect(r.stderr).not.toContain('Excel');
    } finally {
      home.cleanup();
    }
  });

  it('diagnoses a German export in one pass: every flag it needs, in a command to paste', async () => {
    const home = tempHome();
    try {
      const path = join(home.dir, 'export.csv');
      // As German Excel saves "CSV": Windows-1252, ";", decimal commas, its own header spelling.
      const text =
        'Reference ID;Amount;Currency;Recipient\r\nDE-1;1.234,56;EUR;müller@example.com\r\nDE-2;99,90;EUR;b@example.com\r\n';
      writeFileSync(path, Buffer.from(text, 'latin1'));
      const first = await run(['send', path, '--dry-run', '--chunk-size', '50'], { env: home.env });
      expect(first.code).toBe(2);
      const command = `payouts send ${path} --chunk-size 50 --dry-run --encoding windows-1252 --decimal-comma`;
      expect(first.stderr).toContain(
        `export.csv: is Windows-1252 text (Excel "CSV" on Windows), not UTF-8 and writes amounts with a decimal comma (1.234,56). Read with those flags, it has no other problem; --report and --failed-out are then written as it is, with its delimiter and a decimal comma. Run: ${command}\n`,
      );
      expect(first.stderr).toContain('error: 1 problem in the input');
      // The command as given works.
      const again = await run([...command.split(' ').slice(1), '--json'], { env: home.env });
      expect(again.code).toBe(0);
      expect(parseJsonStdout<{ totals: unknown }>(again).totals).toEqual({
        EUR: { count: 2, total: '1334.46' },
      });
    } finally {
      home.cleanup();
    }
  });

  it('reads a German Excel export with German headers in one try after one refusal', async () => {
    const home = tempHome();
    try {
      const path = join(home.dir, 'Auszahlungen Mai.csv');
      // As German Excel saves "CSV": Windows-1252, ";", decimal commas, German headers.
      const text =
        'Referenz;Betrag;Währung;Empfänger;Verwendungszweck\r\n' +
        'DE-1;1.234,01;EUR;müller@example.com;Rechnung März\r\nDE-2;75,50;EUR;b@example.com;Gutschrift\r\n';
      writeFileSync(path, Buffer.from(text, 'latin1'));
      const first = await run(['send', path, '--dry-run'], { env: home.env });
      expect(first.code).toBe(2);
      const map =
        "'reference_id=Referenz,amount=Betrag,currency=Währung,recipient=Empfänger,description=Verwendungszweck'";
      const command = `payouts send '${path}' --dry-run --encoding windows-1252 --decimal-comma --map ${map}`;
      // One problem, naming every flag and the columns read, with the command to paste.
      expect(first.stderr).toContain('error: 1 problem in the input');
      expect(first.stderr).toContain(
        'names its columns "Referenz" (reference_id), "Betrag" (amount), "Währung" (currency), "Empfänger" (recipient), "Verwendungszweck" (description). Read with those flags, it has no other problem; --report and --failed-out are then written as it is, with its delimiter and a decimal comma.',
      );
      expect(first.stderr).toContain(`Check those columns, then run: ${command}\n`);
      // The command as given (its words as a shell splits them) reads the file.
      const words = [path, '--dry-run', '--encoding', 'windows-1252', '--decimal-comma'];
      const again = await run(['send', ...words, '--map', map.slice(1, -1), '--json'], {
        env: home.env,
      });
      expect(again.code).toBe(0);
      expect(parseJsonStdout<{ totals: unknown }>(again).totals).toEqual({
        EUR: { count: 2, total: '1309.51' },
      });
    } finally {
      home.cleanup();
    }
  });

  it('a German export with problems lists each of them with the flags, a repeated reference too', async () => {
    const home = tempHome();
    try {
      const path = join(home.dir, 'mai.csv');
      const text =
        'Referenz;Betrag;Währung;Empfänger\r\n' +
        'DE-1;1.234,01;EUR;a@example.com\r\nDE-2;75,5x;EUR;b@example.com\r\n' +
        'DE-1;0,99;EUR;c@example.com\r\nDE-4;1,00;EURO;d@example.com\r\n';
      writeFileSync(path, Buffer.from(text, 'latin1'));
      const first = await run(['send', path, '--dry-run'], { env: home.env });
      expect(first.code).toBe(2);
      // The flags' command, then what the file holds read with them: every problem.
      const flagged = await run(
        [
          'send',
          path,
          '--dry-run',
          '--encoding',
          'windows-1252',
          '--decimal-comma',
          '--map',
          'reference_id=Referenz,amount=Betrag,currency=Währung,recipient=Empfänger',
        ],
        { env: home.env },
      );
      const problems = (stderr: string) =>
        stderr.split('\n').filter((l) => l.startsWith('mai.csv line ') || /line \d+:/.test(l));
      expect(problems(flagged.stderr)).toHaveLength(3);
      expect(first.stderr).toContain('it still has the 3 problems below');
      expect(first.stderr).toMatch(/line 4: reference_id "DE-1": is used on lines 2 and 4/);
      expect(first.stderr).toContain('error: 4 problems in the input');
    } finally {
      home.cleanup();
    }
  });

  it('knows a column by its name with a currency unit or "Nr." (Betrag (EUR), Beleg-Nr.)', async () => {
    const home = tempHome();
    try {
      const path = join(home.dir, 'juni.csv');
      const text =
        'Beleg-Nr.;Betrag (EUR);Währung;Empfänger\r\nDE-1;1.234,01;EUR;a@example.com\r\n';
      writeFileSync(path, Buffer.from(text, 'latin1'));
      const first = await run(['send', path, '--dry-run'], { env: home.env });
      expect(first.code).toBe(2);
      const map = 'reference_id=Beleg-Nr.,amount=Betrag (EUR),currency=Währung,recipient=Empfänger';
      expect(first.stderr).toContain(`--encoding windows-1252 --decimal-comma --map '${map}'`);
      expect(first.stderr).toContain('error: 1 problem in the input');
      const words = ['--encoding', 'windows-1252', '--decimal-comma', '--map', map, '--json'];
      const again = await run(['send', path, '--dry-run', ...words], { env: home.env });
      expect(again.code).toBe(0);
    } finally {
      home.cleanup();
    }
  });

  it('offers the one column left over for the one field whose name is not a known one', async () => {
    const home = tempHome();
    try {
      const path = join(home.dir, 'juli.csv');
      const text = 'Vorgang;Betrag;Währung;Empfänger\r\nDE-1;1.234,01;EUR;a@example.com\r\n';
      writeFileSync(path, Buffer.from(text, 'latin1'));
      const first = await run(['send', path, '--dry-run'], { env: home.env });
      expect(first.code).toBe(2);
      const map = 'reference_id=Vorgang,amount=Betrag,currency=Währung,recipient=Empfänger';
      expect(first.stderr).toContain('"Vorgang" (reference_id)');
      expect(first.stderr).toContain(`--encoding windows-1252 --decimal-comma --map '${map}'`);
      // Two columns of unknown names for two fields: no guess, the placeholder stays.
      const two = join(home.dir, 'august.csv');
      writeFileSync(two, 'Vorgang;Summe2;Währung;Empfänger\nDE-1;1.00;EUR;a@example.com\n');
      const none = await run(['send', two, '--dry-run'], { env: home.env });
      expect(none.stderr).toMatch(/reference_id="<header>"/);
      // An English file with one extra column and one missing: the extra one is not offered.
      const extra = join(home.dir, 'notes.csv');
      writeFileSync(extra, 'reference_id,amount,currency,notes\nN-1,1.00,EUR,x\n');
      const notes = await run(['send', extra, '--dry-run'], { env: home.env });
      expect(notes.stderr).toContain('--map recipient="<header>"');
    } finally {
      home.cleanup();
    }
  });

  it('offers a --map from French, Spanish, Dutch and Italian headers', async () => {
    const home = tempHome();
    try {
      const headers = [
        ['Référence', 'Montant', 'Devise', 'Bénéficiaire', 'Libellé'],
        ['Referencia', 'Importe', 'Moneda', 'Beneficiario', 'Concepto'],
        ['Kenmerk', 'Bedrag', 'Valuta', 'Begunstigde', 'Omschrijving'],
        ['Riferimento', 'Importo', 'Valuta', 'Beneficiario', 'Causale'],
      ];
      for (const [i, h] of headers.entries()) {
        const path = join(home.dir, `export-${i}.csv`);
        writeFileSync(path, `${h.join(';')}\nX-${i};10.00;EUR;a@example.com;note\n`);
        const r = await run(['send', path, '--dry-run'], { env: home.env });
        expect(r.code).toBe(2);
        const map = `reference_id=${h[0]},amount=${h[1]},currency=${h[2]},recipient=${h[3]},description=${h[4]}`;
        expect(r.stderr.replaceAll("'", '')).toContain(`--dry-run --map ${map}\n`);
        const again = await run(['send', path, '--dry-run', '--map', map], { env: home.env });
        expect(again.code).toBe(0);
      }
    } finally {
      home.cleanup();
    }
  });

  it('offers a column with a known description name as the description', async () => {
    const home = tempHome();
    try {
      const path = join(home.dir, 'run.csv');
      writeFileSync(
        path,
        'reference_id,amount,currency,recipient,Verwendungszweck\nD-1,1.00,EUR,a@example.com,Miete Mai\n',
      );
      const r = await run(['send', path, '--dry-run'], { env: home.env });
      expect(r.code).toBe(0);
      expect(r.stderr).toContain(
        `ignoring column "Verwendungszweck": only reference_id, amount, currency, recipient, description are read (to send "Verwendungszweck" as each payout's description, pass --map description=Verwendungszweck)`,
      );
    } finally {
      home.cleanup();
    }
  });

  it('sends NDJSON, one payout per line', async () => {
    service = await testService();
    const file = join(service.home.dir, 'run.ndjson');
    writeFileSync(
      file,
      '{"reference_id": "L-1", "amount": "1.50", "currency": "EUR", "recipient": "l1@example.com"}\n\n' +
        '{"reference_id": "L-2", "amount": 2.25, "currency": "EUR", "recipient": "l2@example.com", "description": "Zweite"}\n',
    );
    const r = await run(['send', file, '--yes', '--json'], { env: service.env });
    expect(r.code).toBe(0);
    expect((await service.ledger()).get('L-2')).toMatchObject({ amount: '2.25', currency: 'EUR' });
  });

  it("lets flags override a JSON create request's batch_reference and webhook_url", async () => {
    const events: Array<{ event: string; data: { reference_id: string } }> = [];
    const receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => {
        body += d.toString();
      });
      req.on('end', () => {
        events.push(JSON.parse(body));
        res.end('ok');
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    try {
      service = await testService();
      const r = await run(
        [
          'send',
          fixture('input', 'create-request.json'),
          '--yes',
          '--json',
          '--batch-reference',
          'OVERRIDE-1',
          '--webhook-url',
          hook,
        ],
        { env: service.env },
      );
      expect(r.code).toBe(0);
      expect(parseJsonStdout<{ batch_reference: string }>(r).batch_reference).toBe('OVERRIDE-1');
      const deadline = Date.now() + 10_000;
      while (events.length < 2 && Date.now() < deadline)
        await new Promise((res) => setTimeout(res, 50));
      expect(events.map((e) => e.data.reference_id).sort()).toEqual(['CR-1', 'CR-2']);
      expect(events.every((e) => e.event === 'payout.success')).toBe(true);
    } finally {
      receiver.closeAllConnections();
      await new Promise<void>((r) => receiver.close(() => r()));
    }
  });

  it('prints a template that is itself a valid input', async () => {
    const home = tempHome();
    try {
      const csv = await run(['template']);
      expect(csv.code).toBe(0);
      expect(csv.stdout.split('\n')[0]).toBe('reference_id,amount,currency,recipient,description');
      const dry = await run(['send', '-', '--format', 'csv', '--dry-run', '--json'], {
        env: home.env,
        stdin: csv.stdout,
      });
      expect(dry.code).toBe(0);
      expect(parseJsonStdout<{ payout_count: number }>(dry).payout_count).toBe(1);
      const json = await run(['template', '--format', 'json']);
      expect(JSON.parse(json.stdout).payouts).toHaveLength(1);
    } finally {
      home.cleanup();
    }
  });

  it('writes a template workbook that sends, and names a sheet that is not there', async () => {
    const home = tempHome();
    try {
      const t = await run(['template', '--format', 'xlsx', '--json']);
      expect(t.code).toBe(0);
      const doc = JSON.parse(t.stdout) as { format: string; encoding: string; template: string };
      expect([doc.format, doc.encoding]).toEqual(['xlsx', 'base64']);
      const path = join(home.dir, 'run.xlsx');
      writeFileSync(path, Buffer.from(doc.template, 'base64'));
      const dry = await run(['send', path, '--dry-run', '--json'], { env: home.env });
      expect(dry.code).toBe(0);
      expect(parseJsonStdout<{ payout_count: number }>(dry).payout_count).toBe(1);
      // The summary names the sheet it read.
      const summary = await run(['send', path, '--dry-run'], { env: home.env });
      expect(summary.stderr).toMatch(/Sheet: +Payouts of .*run\.xlsx\n/);
      const missing = await run(['send', path, '--sheet', 'May', '--dry-run'], { env: home.env });
      expect(missing.code).toBe(2);
      expect(missing.stderr).toContain(
        'run.xlsx: has no sheet "May"; its sheets are "Payouts": pass one of them to --sheet',
      );
    } finally {
      home.cleanup();
    }
  });
});

describe('payouts send: amount, description and currency rules', () => {
  it('refuses symbols, exponents, signs, over-long numbers and descriptions, and unknown currencies', async () => {
    const home = tempHome();
    try {
      const r = await run(['send', fixture('send', 'amounts.csv'), '--dry-run'], {
        env: home.env,
      });
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/line 2: amount "\$12\.00": remove the currency symbol/);
      expect(r.stderr).toMatch(/line 3: amount "1e3": write the number out in full/);
      expect(r.stderr).toMatch(/line 4: amount "\+5": remove the sign/);
      expect(r.stderr).toMatch(/line 5: amount "12345678901234567": .*JSON number/);
      expect(r.stderr).toMatch(/line 6: description .*256 characters long/);
      expect(r.stderr).toMatch(
        /line 7: currency "XTS": not an ISO 4217 currency code: .*--allow-currency XTS/,
      );
    } finally {
      home.cleanup();
    }
  });

  it('accepts a code outside ISO 4217 with --allow-currency', async () => {
    const home = tempHome();
    const file = join(home.dir, 'xts.csv');
    writeFileSync(file, 'reference_id,amount,currency,recipient\nX-1,7,XTS,x@example.com\n');
    try {
      const refused = await run(['send', file, '--dry-run'], { env: home.env });
      expect(refused.code).toBe(2);
      const r = await run(['send', file, '--dry-run', '--json', '--allow-currency', 'XTS:0'], {
        env: home.env,
      });
      expect(r.code).toBe(0);
      expect(parseJsonStdout<{ totals: Record<string, unknown> }>(r).totals).toEqual({
        XTS: { count: 1, total: '7' },
      });
    } finally {
      home.cleanup();
    }
  });

  it('treats a file with no payouts, and a file that cannot be read, as problems', async () => {
    const home = tempHome();
    try {
      const r = await run(
        ['send', fixture('send', 'header-only.csv'), join(home.dir, 'nope.csv'), '--dry-run'],
        {
          env: home.env,
        },
      );
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/header-only\.csv: no payouts in this file/);
      expect(r.stderr).toMatch(/nope\.csv: /);
    } finally {
      home.cleanup();
    }
  });
});

describe('payouts send: long runs, credentials, reachability, runs', () => {
  it('on a long run lists only rows needing attention unless --all', async () => {
    service = await testService();
    const file = writeCsv(
      join(service.home.dir, 'sixty.csv'),
      'reference_id,amount,currency,recipient',
      60,
      (i) => `LONG-${i},1.00,EUR,${i === 7 ? 'x+failed@example.com' : `u${i}@example.com`}`,
    );
    const r = await run(['send', file, '--yes'], { env: service.env });
    expect(r.code).toBe(4);
    expect(r.stdout).toContain('LONG-7');
    expect(r.stdout).not.toContain('LONG-8\t');
    expect(r.stderr).toContain('59 successful payouts not shown (use --all to list every row)');
    const all = await run(['send', file, '--yes', '--all'], { env: service.env });
    expect(all.stdout).toContain('LONG-8\t');
    expect(all.stderr).toMatch(/60 payouts: 59 succeeded, 1 failed, 0 pending \(60 sent earlier/);
  });

  it('exits 3 when the service rejects the credentials, having applied nothing', async () => {
    service = await testService();
    const r = await run(['send', fixture('send', 'pending.csv'), '--yes'], {
      env: { ...service.env, PAYOUTS_CLIENT_SECRET: 'wrong-secret' },
    });
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/rejected the credentials/);
    expect((await service.ledger()).size).toBe(0);
  });

  it('exits 7 when the service cannot be reached', async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const home = tempHome();
    try {
      const r = await run(['send', fixture('send', 'pending.csv'), '--yes', '--json'], {
        env: {
          ...home.env,
          PAYOUTS_CLIENT_ID: 'id',
          PAYOUTS_CLIENT_SECRET: 's',
          PAYOUTS_BASE_URL: `http://127.0.0.1:${port}`,
        },
      });
      expect(r.code).toBe(7);
      expect(r.stderr).toMatch(
        /could not reach 127\.0\.0\.1:\d+ \(connection refused\); nothing was sent/,
      );
      const doc = parseJsonStdout<{ results: Array<{ status: string }> }>(r);
      expect(doc.results.map((x) => x.status)).toEqual(['not_sent', 'not_sent']);
    } finally {
      home.cleanup();
    }
  });

  it('lists journaled runs and shows one', async () => {
    service = await testService();
    expect(
      (await run(['send', fixture('send', 'triggers.csv'), '--yes'], { env: service.env })).code,
    ).toBe(4);
    const list = await run(['runs', '--json'], { env: service.env });
    expect(list.code).toBe(0);
    const { runs } = parseJsonStdout<{
      runs: Array<{ run_id: string; payout_count: number; counts: Record<string, number> }>;
    }>(list);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({
      payout_count: 4,
      counts: { success: 1, failed: 1, canceled: 1, pending: 1 },
    });
    const show = await run(['runs', 'show', runs[0]!.run_id.slice(0, 6)], { env: service.env });
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(/\nTR-CANC-1\tGBP 40\.00\tcanceled\t/);
  });
});

describe('payouts send --dry-run: the same checks as a real send', () => {
  it('reports duplicate references, including one whose first row was refused', async () => {
    const home = tempHome();
    try {
      const r = await run(['send', fixture('send', 'problems.csv'), '--dry-run'], {
        env: home.env,
      });
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(
        /problems\.csv line 9: reference_id "P-1": is used on lines 2 and 9: /,
      );
      const both = await run(
        ['send', fixture('send', 'excel-bom-crlf.csv'), fixture('send', 'second.csv'), '--dry-run'],
        {
          env: home.env,
        },
      );
      expect(both.code).toBe(2);
      expect(both.stderr).toMatch(
        /second\.csv line 3: reference_id "XL-001": is used on \S*excel-bom-crlf\.csv line 2 and \S*second\.csv line 3: /,
      );
    } finally {
      home.cleanup();
    }
  });
});
