/**
 * What the tests of runs stopped by their storage (issue 31) read of send's --json document:
 * every row once, and counts that are the rows' statuses.
 */
import { expect } from 'vitest';
import type { SendDoc } from '../../src/core/documents.js';

export type { SendDoc };

/** The --json document a terminal showed among the lines on stderr. */
export function documentOn(output: string): SendDoc {
  const lines = output.split('\n');
  const start = lines.indexOf('{');
  const end = lines.indexOf('}', start);
  if (start < 0 || end < 0) throw new Error(`no JSON document in:\n${output}`);
  return JSON.parse(lines.slice(start, end + 1).join('\n')) as SendDoc;
}

/** The part of send's --json document these tests read. */

/** Checks that every row is in the document once and that its counts are its rows' statuses. */
export function expectEveryRow(doc: SendDoc, refs: string[]): void {
  expect(doc.results.map((r) => r.reference_id)).toEqual(refs);
  const count = (s: string) => doc.results.filter((r) => r.status === s).length;
  expect(doc.success_count).toBe(count('success'));
  expect(doc.not_sent_count).toBe(count('not_sent'));
  expect(doc.unknown_count).toBe(count('outcome_unknown'));
  expect(doc.failed_count! + doc.pending_count!).toBe(0);
  expect(doc.success_count! + doc.not_sent_count! + doc.unknown_count!).toBe(refs.length);
  expect(doc.outcome_unknown.sort()).toEqual(
    doc.results.filter((r) => r.status === 'outcome_unknown').map((r) => r.reference_id),
  );
}
