import { describe, expect, it } from 'vitest';
import {
  acceptedByAjv,
  distinctShapes,
  misspelt,
  mutationsOf,
  pathText,
} from '../helpers/json-mutations.js';

// The mistakes test/inprocess/json-documents.test.ts writes into every shape of document:
// what they are, and that a mistake a schema takes is reported.

/** A status document of one found payout, as `payouts status R-1 --json` prints it. */
function statusDoc(status = 'success'): Record<string, unknown> {
  const record = {
    reference_id: 'R-1',
    status,
    amount: '1.25',
    currency: 'EUR',
    created_at: null,
    updated_at: null,
    transaction_id: 'T-1',
    recipient: 'r@ex.com',
    description: null,
    the_service_s_own: { any: 'thing' },
  };
  const counts = {
    success_count: 1,
    paid_by_retry_count: 0,
    pending_count: 0,
    failed_count: 0,
    unknown_count: 0,
  };
  return {
    schema_version: 1,
    command: 'status',
    exit_code: 0,
    watch: false,
    timed_out: false,
    interrupted: false,
    reference_count: 1,
    ...counts,
    not_found_count: 0,
    error_count: 0,
    error: null,
    results: [
      {
        reference_id: 'R-1',
        outcome: 'found',
        status,
        service_status: status,
        error: null,
        record,
        retried_as: null,
        paid_by_retry: false,
      },
    ],
  };
}

/** The mutations of a document as "path: kind value" lines. */
function lines(doc: unknown, command: string | null): string[] {
  return mutationsOf(doc, command).map(
    (m) => `${pathText(m.path)}: ${m.kind} ${JSON.stringify(m.value ?? m.key ?? null)}`,
  );
}

describe('the mistakes written into a document', () => {
  it('misspell a value as a person would', () => {
    expect(misspelt('success')).toBe('sucess');
    expect(misspelt('failed')).toBe('faile');
    expect(misspelt('x')).toBe('xx');
  });

  it('drop every key, retype every value, misspell enumerated ones, and push exit codes out', () => {
    const all = lines(statusDoc(), 'status');
    expect(all).toEqual(
      expect.arrayContaining([
        'schema_version: key dropped null',
        'schema_version: wrong type "1"',
        'command: misspelt "statu"',
        'exit_code: exit code out of the enum 12',
        'error: wrong type "x"',
        'error: wrong type {}',
        'results: list as string "none"',
        'results[0]: wrong type "none"',
        'results[0].status: misspelt "sucess"',
        'results[0].service_status: wrong type 7',
        'results[0].record.status: misspelt "sucess"',
        'results[0].record.description: key dropped null',
      ]),
    );
    // A free text is not misspelt: only the values the docs enumerate are.
    expect(all).not.toContain('results[0].reference_id: misspelt "R-"');
    expect(all.filter((l) => l.includes('service_status: misspelt'))).toEqual([]);
  });

  it("leave alone what the docs let be absent, and the service's own fields of a record", () => {
    const doc = statusDoc();
    (doc.results as Array<Record<string, unknown>>)[0]!.history = { reason: null, retried: null };
    const all = lines(doc, 'status');
    expect(all.some((l) => l.startsWith('results[0].history: key dropped'))).toBe(false);
    expect(all).toContain('results[0].history.reason: key dropped null');
    expect(all.some((l) => l.includes('the_service_s_own'))).toBe(false);
  });

  it('rename a currency key rather than drop it: a map of totals may hold any currency', () => {
    const all = lines({ totals: { EUR: { count: 1, total: '1.00' } } }, 'send');
    expect(all).toContain('totals.EUR: currency key "eur"');
    expect(all).not.toContain('totals.EUR: key dropped null');
  });

  it('are reported when a schema accepts them', () => {
    const doc = statusDoc();
    const mutations = [
      {
        path: ['results', 0, 'status'],
        kind: 'misspelt' as const,
        op: 'set' as const,
        value: 'sucess',
      },
      // Not a mistake at all: another documented status (record and result then disagree).
      {
        path: ['results', 0, 'status'],
        kind: 'misspelt' as const,
        op: 'set' as const,
        value: 'pending',
      },
    ];
    expect(acceptedByAjv('status.schema.json', doc, mutations)).toEqual([1]);
    // Each mutation is undone: the document is as it was.
    expect(doc).toEqual(statusDoc());
  });
});

describe('the shapes of documents', () => {
  it('keep one item of each shape in a list, and one document of each shape', () => {
    const row = (status: string, ref: string) => ({ reference_id: ref, status });
    const doc = (rows: unknown[]) => ({ command: 'send', exit_code: 4, results: rows });
    const shapes = distinctShapes([
      {
        file: 'send.schema.json',
        doc: doc([row('success', 'A'), row('success', 'B'), row('failed', 'C')]),
      },
      { file: 'send.schema.json', doc: doc([row('failed', 'D'), row('success', 'E')]) },
      { file: 'send.schema.json', doc: doc([row('pending', 'F')]) },
    ]);
    expect(shapes.map((s) => s.doc)).toEqual([
      doc([row('success', 'A'), row('failed', 'C')]),
      doc([row('pending', 'F')]),
    ]);
  });
});
