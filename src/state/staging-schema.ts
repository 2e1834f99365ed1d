/**
 * The schema of a private staging database (intake.ts): never a history, so apart from the
 * steps of schema.ts; docs/journal.md describes it.
 */
import type { SchemaStep, TableDef } from './dialect.js';

/** A table of an integer key and a text. */
const keyed = (name: string, key: string, text: string): TableDef => ({
  name,
  columns: [
    [key, 'int', 'PRIMARY KEY'],
    [text, 'text', 'NOT NULL'],
  ],
});

/**
 * A dry run's private database (intake.ts), never a history: a chunk of payouts a row of
 * `staged_chunks` (docs/journal.md), one row per payout in the view `staged`.
 */
export const STAGING: readonly SchemaStep[] = [
  {
    only: 'sqlite',
    ops: [
      { table: keyed('staged_files', 'id', 'name') },
      { table: keyed('staged_chunks', 'first_row', 'payouts') },
      {
        view: 'staged',
        select: `  SELECT c.first_row + j.key AS row, j.value ->> 0 AS reference_id, f.name AS file,
    j.value ->> 2 AS line, coalesce(j.value ->> 3, 'line ' || (j.value ->> 2)) AS location,
    j.value ->> 4 AS amount, j.value ->> 5 AS currency, j.value ->> 6 AS recipient,
    j.value ->> 7 AS retry_of
  FROM staged_chunks c, json_each(c.payouts) j JOIN staged_files f ON f.id = j.value ->> 1`,
      },
    ],
  },
];
