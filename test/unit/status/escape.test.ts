import { Chalk } from 'chalk';
import { describe, expect, it } from 'vitest';
import type { RetryPolicy } from '../../../src/api/retry.js';
import { checkStatuses } from '../../../src/core/status/check.js';
import type { LookupOutcome } from '../../../src/core/status/lookup.js';
import { renderDetail, renderStatus } from '../../../src/core/status/render.js';
import { ServiceError } from '../../../src/errors.js';
import { fakeReader } from './fake-reader.js';
import { memoryOutput } from './output-helper.js';

/** Retitles the window, rings the bell and breaks the line, if it reaches a terminal raw. */
const EVIL = '\u001b]0;pwned\u0007\nX';
const SHOWN = '\\x1b]0;pwned\\x07\\nX';
/** ESC, BEL and the other controls, line breaks aside (they separate our own lines). */
const RAW = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

const record = {
  reference_id: `PO-1${EVIL}`,
  status: 'success',
  amount: 10,
  currency: 'USD',
  recipient: `ann${EVIL}`,
  transaction_id: 'tx-1',
  message: `Paid${EVIL}`,
  [`note${EVIL}`]: `\u202eevil`,
};
const found: LookupOutcome = { reference_id: record.reference_id, kind: 'found', record };
const broken: LookupOutcome = {
  reference_id: `PO-2${EVIL}`,
  kind: 'error',
  error: new ServiceError(`the service failed (HTTP 500): ${EVIL}`, {
    serviceMessages: [EVIL],
  }),
};

describe('payouts status shows text from the service escaped', () => {
  it('keeps each table row on one line and each warning on one line', async () => {
    const m = memoryOutput();
    await renderStatus(
      m.output,
      { outcomes: [found, broken], timedOut: false },
      { single: false, watch: false },
    );
    const out = m.stdout();
    // Tabs are ours: on a pipe the table is tab-separated.
    expect(out.replaceAll('\t', ' ')).not.toMatch(RAW);
    const rows = out.split('\n').filter((l) => l.includes('PO-'));
    expect(rows).toHaveLength(2);
    // The row needing attention comes first.
    expect(rows[1]).toContain(`PO-1${SHOWN}`);
    expect(rows[1]).toMatch(/success.*USD 10\.00.*ann\\x1b/);
    expect(rows[0]).toMatch(/PO-2\\x1b.*error/);
    expect(m.stderr()).not.toMatch(RAW);
    expect(m.stderr()).toContain(`PO-2${SHOWN}: the service failed (HTTP 500): ${SHOWN}\n`);
    expect(m.stderr().trimEnd().split('\n')).toHaveLength(2);
  });

  it('keeps each field of the detail view on its own line', async () => {
    const m = memoryOutput();
    await renderStatus(
      m.output,
      { outcomes: [found], timedOut: false },
      { single: true, watch: false },
    );
    const lines = m.stdout().trimEnd().split('\n');
    expect(m.stdout()).not.toMatch(RAW);
    expect(lines).toHaveLength(10);
    expect(lines.filter((l) => /^message +Paid\\x1b\]0;pwned\\x07\\nX$/.test(l))).toHaveLength(1);
    expect(lines).toContain(`note${SHOWN}  \\u202eevil`);
    // A status that is itself a control sequence stays text, even where we write colours.
    const colored = renderDetail({ ...record, status: '\u001b[2J' }, new Chalk({ level: 1 }));
    expect(colored).toContain('\\x1b[2J');
    expect(colored).not.toContain('\u001b[2J');
  });

  it('escapes references in the --watch log and the timeout warning', async () => {
    const ref = `a${EVIL}`;
    const m = memoryOutput();
    let t = 0;
    const retry: RetryPolicy = {
      maxAttempts: 1,
      baseDelayMs: 1,
      maxDelayMs: 1,
      maxTotalMs: 1_000,
      maxRetryAfterMs: 1,
    };
    const report = await checkStatuses(
      fakeReader({ [ref]: ['pending'] }).reader,
      {
        references: [ref],
        concurrency: 1,
        watch: { intervalMs: 1_000, maxIntervalMs: 1_000, timeoutMs: 1_000 },
      },
      {
        output: m.output,
        retry,
        now: () => t,
        sleep: async (ms) => {
          t += ms;
        },
      },
    );
    await renderStatus(m.output, report, { single: true, watch: false });
    expect(m.stderr()).not.toMatch(RAW);
    expect(m.stderr()).toMatch(/ a\\x1b\]0;pwned\\x07\\nX: pending\n/);
    expect(m.stderr()).toContain(`not final yet: a${SHOWN}\n`);
  });

  it('keeps the exact text under --json', async () => {
    const m = memoryOutput({ json: true });
    await renderStatus(
      m.output,
      { outcomes: [found, broken], timedOut: false },
      { single: false, watch: false },
    );
    const doc = JSON.parse(m.stdout());
    expect(doc.results[0].record).toMatchObject({ ...record, amount: expect.any(String) });
    expect(doc.results[1]).toMatchObject({
      reference_id: broken.reference_id,
      error: `the service failed (HTTP 500): ${EVIL}`,
    });
  });
});
