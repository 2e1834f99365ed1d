import { once } from 'node:events';
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileSource, readPayouts } from '../../../src/input/index.js';
import { CurrencyTable } from '../../../src/money/currencies.js';

const ROWS = 20_000;
let dir: string;
let path: string;

/** Writes a CSV of `ROWS` payouts, with a quoted multi-line note (an extra column) every 1000 rows. */
async function writeCsv(file: string): Promise<void> {
  const out = createWriteStream(file);
  out.write('reference_id,amount,currency,recipient,description,note\r\n');
  let buf = '';
  for (let i = 1; i <= ROWS; i++) {
    const note = i % 1000 === 0 ? '"two\nlines"' : '';
    buf += `ref-${i},${(i % 9999) + 1}.${String(i % 100).padStart(2, '0')},USD,user${i}@example.com,Invoice ${i},${note}\r\n`;
    if (buf.length > 1 << 16) {
      if (!out.write(buf)) await once(out, 'drain');
      buf = '';
    }
  }
  out.end(buf);
  await once(out, 'finish');
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'payouts-intake-'));
  path = join(dir, 'big.csv');
  await writeCsv(path);
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('streaming a large CSV', () => {
  it('visits every row of a file read in many blocks, with its line and amount', async () => {
    let count = 0;
    let problems = 0;
    let lastLocation = '';
    let minorSum = 0n;
    const opts = { currencies: new CurrencyTable() };
    const meta = await readPayouts(fileSource(path), opts, {
      payout(p) {
        count++;
        minorSum += p.amount.minor;
        lastLocation = p.location;
      },
      problem() {
        problems++;
      },
      warning() {},
    });
    expect(problems).toBe(0);
    expect(count).toBe(ROWS);
    expect(meta.rows).toBe(ROWS);
    // Every 1000th row spans two lines, so the last row starts ROWS / 1000 - 1 lines later than its index.
    expect(lastLocation).toBe(`line ${ROWS + 1 + ROWS / 1000 - 1}`);
    let expected = 0n;
    for (let i = 1; i <= ROWS; i++) expected += BigInt(((i % 9999) + 1) * 100 + (i % 100));
    expect(minorSum).toBe(expected);
  });
});
