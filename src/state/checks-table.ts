/**
 * The table of the service's later word on the payouts (issue 47), and the step that makes it:
 * `checks`, appended, indexed by payout and by run; the view `journal` taking each payout's
 * latest word; `run_counts` kept as of a run's latest check (run-counts.ts); on PostgreSQL
 * the rules that keep it (pg/checks-guards.ts). docs/journal.md describes them for auditors.
 */
import type { SchemaStep, TableDef } from './dialect.js';
import { CHECKS_KEPT } from './pg/checks-guards.js';

/**
 * The service's later word on a payout the history holds (issue 47), appended: what a lookup
 * answered (`held` 0: "Payout not found"), the service's `updated_at`, when it was checked and
 * by which command; on PostgreSQL `by_role` is the session's role, whatever the client writes.
 */
export const CHECKS: TableDef = {
  name: 'checks',
  columns: [
    ['id', 'id'],
    ['run', 'int', 'NOT NULL'],
    ['row', 'int', 'NOT NULL'],
    ['held', 'int', 'NOT NULL CHECK (held IN (0, 1))'],
    ['status', 'text'],
    ['transaction_id', 'text'],
    ['updated_at', 'text'],
    ['checked_at', 'text', 'NOT NULL'],
    ['checked_by', 'text', 'NOT NULL'],
    ['by_role', 'text'],
  ],
};

/**
 * The view `journal` with each payout's latest word from the service (`checks`): a payout it
 * holds takes the word's status and transaction id (the result's message only while the status
 * is the result's), and one in doubt is done; "not found" changes neither, it is told by
 * `missing`. `checked_at`, `checked_by` and `checked_role` say when, how and (on a shared
 * history) by whom the latest word came. A word counts
 * only for a payout that was sent (a result, or an intent in flight or unknown).
 */
const JOURNAL_CHECKED = `  SELECT p.run, p.row, p.reference_id, p.file, p.line, p.location, p.amount, p.currency,
    p.recipient, p.description, p.hash, p.hash_version,
    CASE WHEN d.row IS NOT NULL OR c.held = 1 THEN 'done' ELSE coalesce(i.state, 'queued') END
      AS state,
    coalesce(d.req, i.req) AS req, i.sent_at,
    CASE WHEN c.held = 1 THEN c.status ELSE d.status END AS status,
    CASE WHEN c.held = 1 THEN coalesce(c.transaction_id, d.transaction_id) ELSE d.transaction_id END
      AS transaction_id,
    d.charges,
    CASE WHEN c.held = 1 AND c.status IS DISTINCT FROM d.status THEN NULL ELSE d.message END
      AS message,
    CASE WHEN d.row IS NULL AND c.held IS NULL THEN i.note END AS note,
    coalesce(d.at, i.updated_at) AS updated_at, p.retry_of,
    c.checked_at, c.checked_by, CASE WHEN c.held = 0 THEN 1 ELSE 0 END AS missing,
    c.updated_at AS service_updated_at, c.by_role AS checked_role
  FROM payouts p
    LEFT JOIN intents i ON i.run = p.run AND i.row = p.row
    LEFT JOIN results d ON d.run = p.run AND d.row = p.row
    LEFT JOIN checks c ON c.id = (SELECT max(x.id) FROM checks x
      WHERE x.run = p.run AND x.row = p.row)
      AND (d.row IS NOT NULL OR i.state IN ('in_flight', 'unknown'))`;

/** The step, appended to STEPS (schema.ts). */
export const CHECKS_STEP: SchemaStep = {
  ops: [
    { table: CHECKS },
    { index: { name: 'checks_payout', table: 'checks', columns: ['run', 'row', 'id'] } },
    { index: { name: 'checks_run', table: 'checks', columns: ['run', 'id'] } },
    { sql: 'ALTER TABLE run_counts ADD COLUMN checked INTEGER NOT NULL DEFAULT 0' },
    { sqlite: 'DROP VIEW journal' },
    { sqlite: `CREATE VIEW journal AS\n${JOURNAL_CHECKED}` },
    { pg: `CREATE OR REPLACE VIEW journal AS\n${JOURNAL_CHECKED}` },
    { pg: CHECKS_KEPT },
  ],
};
