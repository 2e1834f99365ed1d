import { describe, expect, it } from 'vitest';
import { sendDocHead, statusDocHead } from '../../src/core/documents.js';
import { checkJsonDocument } from '../helpers/json-schema.js';

// The schemas of docs/schema/ refuse what issue 26 found: keys that come and go, charges as
// numbers, an exit code other than 0, 4 or 5 without an error object.

const ROW = {
  reference_id: 'R-1',
  status: 'success',
  transaction_id: 'T-1',
  amount: '1.25',
  currency: 'EUR',
  charges: '0.50',
  message: null,
  sent_earlier: false,
  found_at_service: false,
};

/** Checks `doc` as the stdout of `payouts send --json`, exiting `code`. */
function check(doc: unknown, code: number, command = 'send'): void {
  checkJsonDocument([command, 'x', '--json'], { code, stdout: JSON.stringify(doc), stderr: '' });
}

describe('the --json schemas', () => {
  const head = { ...sendDocHead({ dryRun: false, sandbox: false }), payout_count: 1 };

  it('take a complete send document', () => {
    expect(() => check({ ...head, results: [ROW] }, 0)).not.toThrow();
  });

  it('refuse a missing key, an unknown one, or charges as a number', () => {
    const { charges_unknown_count: _gone, ...missing } = head;
    expect(() => check({ ...missing, results: [] }, 0)).toThrow(/charges_unknown_count/);
    expect(() => check({ ...head, extra: 1, results: [] }, 0)).toThrow(/additional/);
    expect(() => check({ ...head, results: [{ ...ROW, charges: 0.5 }] }, 0)).toThrow(/charges/);
  });

  it('refuse an exit code other than 0, 4 or 5 without an error object, or a mismatch', () => {
    expect(() => check({ ...head, exit_code: 3, results: [] }, 3)).toThrow(/error/);
    expect(() => check({ ...head, exit_code: 0, results: [] }, 4)).toThrow(/exit_code 0/);
  });

  it('take a status document, and refuse a bare record', () => {
    const doc = { ...statusDocHead({ watch: false }), results: [] };
    expect(() => check(doc, 0, 'status')).not.toThrow();
    expect(() => check({ reference_id: 'R-1', status: 'success' }, 0, 'status')).toThrow();
  });
});
