import { Chalk } from 'chalk';
import { describe, expect, it } from 'vitest';
import type { LookupOutcome } from '../../../src/core/status/lookup.js';
import {
  formatAmount,
  formatLocal,
  formatTimestamp,
  parseServiceTime,
  renderDetail,
  renderStatus,
  statusDocument,
  tableRow,
} from '../../../src/core/status/render.js';
import { ServiceError } from '../../../src/errors.js';
import { memoryOutput } from './output-helper.js';

const plain = new Chalk({ level: 0 });
const colored = new Chalk({ level: 1 });

const record = {
  reference_id: 'po-1',
  status: 'success',
  amount: 1234.5,
  currency: 'USD',
  recipient: 'ann@example.com',
  description: 'May invoice',
  transaction_id: 'tx-9',
  created_at: '2024-05-01T10:00:00Z',
  updated_at: '2024-05-01T10:05:00Z',
  fee_note: 'extra field',
};
const found: LookupOutcome = { reference_id: 'po-1', kind: 'found', record };
const missing: LookupOutcome = { reference_id: 'po-x', kind: 'not_found' };
const broken: LookupOutcome = {
  reference_id: 'po-e',
  kind: 'error',
  error: new ServiceError('the service failed (HTTP 500)'),
};

describe('statusDocument', () => {
  const facts = { watch: false, timedOut: false, exitCode: 7, error: null };

  it('has one result per reference, its record with the amount as a decimal string', () => {
    const doc = statusDocument([found], { ...facts, exitCode: 0 });
    expect(doc).toMatchObject({ schema_version: 1, command: 'status', reference_count: 1 });
    expect(doc.results).toEqual([
      {
        reference_id: 'po-1',
        outcome: 'found',
        status: 'success',
        service_status: 'success',
        error: null,
        record: { ...record, amount: '1234.50' },
        retried_as: null,
        paid_by_retry: false,
      },
    ]);
  });

  it('gives the record every field of the interface, null when the service left one out', () => {
    const bare: LookupOutcome = {
      reference_id: 'po-2',
      kind: 'found',
      record: { reference_id: 'po-2', status: 'processing', amount: 5, extra: [1] },
    };
    const [result] = statusDocument([bare], { ...facts, exitCode: 5 }).results;
    expect(result).toMatchObject({ status: 'undocumented', service_status: 'processing' });
    expect(result?.record).toEqual({
      reference_id: 'po-2',
      status: 'undocumented',
      amount: '5',
      currency: null,
      created_at: null,
      updated_at: null,
      transaction_id: null,
      recipient: null,
      description: null,
      extra: [1],
    });
  });

  it('keeps every reference in order, those not found and in error with their reason', () => {
    const doc = statusDocument([found, missing, broken], facts);
    expect(doc.results.map((r) => [r.reference_id, r.outcome, r.error])).toEqual([
      ['po-1', 'found', null],
      ['po-x', 'not_found', 'Payout not found'],
      ['po-e', 'error', 'the service failed (HTTP 500)'],
    ]);
    expect(doc).toMatchObject({ success_count: 1, not_found_count: 1, error_count: 1 });
  });
});

describe('formatting', () => {
  it('shows amounts with their currency decimals', () => {
    expect(formatAmount(1234.5, 'USD')).toBe('USD 1,234.50');
    expect(formatAmount(1234.5, 'USD', false)).toBe('USD 1234.50');
    expect(formatAmount(1000, 'JPY')).toBe('JPY 1,000');
    expect(formatAmount(1.5, 'KWD')).toBe('KWD 1.500');
    expect(formatAmount(2.25, 'XYZ')).toBe('XYZ 2.25');
    expect(formatAmount(undefined, 'USD')).toBe('');
  });

  it('reads service times as UTC, also without a zone', () => {
    expect(parseServiceTime('2024-05-01T10:00:00Z')?.toISOString()).toBe(
      '2024-05-01T10:00:00.000Z',
    );
    expect(parseServiceTime('2024-05-01 10:00:00')?.toISOString()).toBe('2024-05-01T10:00:00.000Z');
    expect(parseServiceTime('2024-05-01T12:00:00+02:00')?.toISOString()).toBe(
      '2024-05-01T10:00:00.000Z',
    );
    expect(parseServiceTime('yesterday')).toBeUndefined();
  });

  it('shows local time with its offset', () => {
    const d = new Date('2024-05-01T10:00:00Z');
    const text = formatLocal(d);
    expect(text).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} [+-]\d{2}:\d{2}$/);
    // Read back as ISO 8601 with its offset, it must be the same instant.
    const [day, time, offset] = text.split(' ');
    expect(new Date(`${day}T${time}${offset}`).getTime()).toBe(d.getTime());
  });

  it('shows timestamps in UTC and local time, and unreadable ones as they are', () => {
    expect(formatTimestamp('2024-05-01T10:00:00Z')).toMatch(
      /^2024-05-01T10:00:00\.000Z \(local \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} [+-]\d{2}:\d{2}\)$/,
    );
    expect(formatTimestamp('soon')).toBe('soon');
  });
});

describe('renderDetail', () => {
  it('shows every field of the record, including ones the CLI does not know', () => {
    const text = renderDetail(record, plain);
    for (const expected of [
      /Reference ID\s+po-1/,
      /Status\s+success/,
      /Amount\s+USD 1,234\.50/,
      /Recipient\s+ann@example\.com/,
      /Description\s+May invoice/,
      /Transaction ID\s+tx-9/,
      /Created at\s+2024-05-01T10:00:00\.000Z \(local /,
      /Updated at\s+2024-05-01T10:05:00\.000Z \(local /,
      /fee_note\s+extra field/,
    ]) {
      expect(text).toMatch(expected);
    }
  });

  it('colours the status', () => {
    expect(renderDetail(record, colored)).toContain(colored.green('success'));
    expect(renderDetail({ ...record, status: 'failed' }, colored)).toContain(colored.red('failed'));
  });
});

describe('tableRow and renderStatus', () => {
  it('marks not-found and failed lookups', () => {
    expect(tableRow(missing, plain)).toEqual(['po-x', 'not found', '', '', '', '', '']);
    expect(tableRow(broken, plain)[1]).toBe('error');
    expect(tableRow(found, plain)).toEqual([
      'po-1',
      'success',
      'USD 1,234.50',
      'ann@example.com',
      'tx-9',
      '2024-05-01 10:05',
      '',
    ]);
  });

  it('prints a table for several references and the error messages on stderr', async () => {
    const m = memoryOutput();
    await renderStatus(
      m.output,
      { outcomes: [found, missing, broken], timedOut: false },
      { single: false, watch: false },
    );
    expect(m.stdout()).toMatch(/po-1.*success/);
    expect(m.stdout()).toMatch(/po-x.*not found/);
    expect(m.stderr()).toContain('po-e: the service failed (HTTP 500)');
    expect(m.stderr()).toContain(
      '3 payouts: 1 succeeded, 0 failed, 0 canceled, 0 pending, 1 not found, 1 could not be looked up',
    );
  });

  it('prints the detail view for one reference and "not found" for a missing one', async () => {
    const a = memoryOutput();
    await renderStatus(
      a.output,
      { outcomes: [found], timedOut: false },
      { single: true, watch: false },
    );
    expect(a.stdout()).toMatch(/Transaction ID\s+tx-9/);
    const b = memoryOutput();
    await renderStatus(
      b.output,
      { outcomes: [missing], timedOut: false },
      { single: true, watch: false },
    );
    expect(b.stdout()).toBe('po-x: not found\n');
  });

  it('warns when the watch timed out, naming what is not final', async () => {
    const m = memoryOutput({ json: true });
    const pending: LookupOutcome = {
      reference_id: 'po-p',
      kind: 'found',
      record: { ...record, reference_id: 'po-p', status: 'pending' },
    };
    await renderStatus(
      m.output,
      { outcomes: [found, pending], timedOut: true },
      { single: false, watch: false },
    );
    expect(m.stderr()).toMatch(/not final yet: po-p$/m);
    expect(JSON.parse(m.stdout())).toMatchObject({ timed_out: true, reference_count: 2 });
  });
});
