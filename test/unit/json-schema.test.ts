import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { sendDocHead, statusDocHead } from '../../src/core/documents.js';
import {
  checkJsonDocument,
  commandPath,
  commandValues,
  schemaFileOf,
  schemaFiles,
  validatorOf,
} from '../helpers/json-schema.js';

// The schemas of docs/schema/ refuse what issue 26 found: keys that come and go, charges as
// numbers, an exit code other than 0, 4 or 5 without an error object.

const ROW = {
  reference_id: 'R-1',
  status: 'success',
  service_status: 'success',
  transaction_id: 'T-1',
  amount: '1.25',
  currency: 'EUR',
  charges: '0.50',
  message: null,
  sent_earlier: false,
  found_at_service: false,
  retried_as: null,
  paid_by_retry: false,
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
    expect(() => check({ ...head, extra: 1, results: [] }, 0)).toThrow(/unevaluated/);
    expect(() => check({ ...head, results: [{ ...ROW, extra: 1 }] }, 0)).toThrow(/unevaluated/);
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

  it('refuse a document without its head, of another command, or whose exit code differs', () => {
    const error = {
      type: 'UsageError',
      message: 'm',
      exit_code: 2,
      problems: null,
      problem_count: null,
      references: null,
    };
    const ok = { schema_version: 1, command: 'runs show', error };
    const doc = (d: unknown, code: number) => ({ code, stdout: JSON.stringify(d), stderr: '' });
    const argv = ['runs', 'show', 'abc', '--json'];
    expect(() => checkJsonDocument(argv, doc(ok, 2))).not.toThrow();
    expect(() => checkJsonDocument(argv, doc({ error }, 2))).toThrow(/says command undefined/);
    const { schema_version: _v, ...headless } = ok;
    expect(() => checkJsonDocument(argv, doc(headless, 2))).toThrow(/runs-show\.schema\.json/);
    expect(() => checkJsonDocument(argv, doc({ ...ok, command: 'runs list' }, 2))).toThrow(
      /says command "runs list"/,
    );
    expect(() => checkJsonDocument(argv, doc(ok, 7))).toThrow(/exit_code 2/);
  });
});

describe('the command an argv runs', () => {
  it('skips global options and their values, and takes a group alone as its default', () => {
    expect(commandPath(['--profile', 'runs', 'config', 'check', '--json'])).toBe('config check');
    expect(commandPath(['runs', '--json'])).toBe('runs list');
    expect(commandPath(['runs', 'show', 'abc'])).toBe('runs show');
    expect(commandPath(['approvals', '--json'])).toBe('approvals list');
    expect(commandPath(['send', 'runs', '--json'])).toBe('send');
    expect(commandPath(['--json'])).toBeUndefined();
  });
});

describe('docs/schema/', () => {
  it('loads into one validator, each file by its own $id', () => {
    for (const [name, schema] of schemaFiles()) {
      expect(schema.$id).toBe(`https://payouts.example/schema/${name}`);
      expect(() => validatorOf(name), name).not.toThrow();
    }
  });

  it('is listed in docs/json.md as it is: every file, with the command values each holds', () => {
    const page = readFileSync(new URL('../../docs/json.md', import.meta.url), 'utf8');
    const section = page.slice(page.indexOf('## The schemas'));
    const rows = section.split('\n').filter((l) => l.startsWith('| ['));
    const files = schemaFiles();
    const listed = rows.flatMap((r) =>
      [...r.matchAll(/\(schema\/([\w-]+\.schema\.json)\)/g)].map((m) => m[1]),
    );
    expect(listed.sort()).toEqual([...files.keys()]);
    expect(section).toContain(`The ${files.size} files`);
    for (const command of commandValues()) {
      const row = rows.find((r) => r.split(' | ')[1]?.includes(`\`${command}\``));
      expect(row, `docs/json.md lists no schema for "${command}"`).toBeDefined();
      expect(row).toContain(`(schema/${schemaFileOf(command)})`);
    }
  });
});
