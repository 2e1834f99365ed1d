/**
 * The schema of a history, written once for state.db (SQLite) and a shared history
 * (PostgreSQL): its tables as data (tables.ts; dialect.ts makes each dialect's DDL of them) and
 * the steps that migrate a database, only ever appended; docs/journal.md describes the tables for
 * auditors.
 *
 * Since step 2 a payout's row is written once (pass 1); what happens to it goes to narrow
 * tables of its own, appended as it happens: `intents` (sent, freed, unknown), `results`
 * (what the service stated) and `reports` (the last send's outcome where it is not the stated
 * result). The view `journal` puts them together, one row per payout, as step 1 had them.
 *
 * SQLite's steps 1 to 3 came before PostgreSQL, whose step 1 (`only: 'pg'`) creates the same
 * tables as they stand after them, with `locks` (SQLite has lock files). Every later step
 * serves both: SQLite's version is then 3 + n, PostgreSQL's 1 + n.
 */
import { migrationsFor, type SchemaStep } from './dialect.js';
import { CHECKS_STEP } from './checks-table.js';
import { APPROVAL_GUARDS } from './pg/approval-guards.js';
import { ATTEMPTS_KEPT, GUARDS, RECORDER, RULE_OWNER } from './pg/guards.js';
import { LOCK_WAITERS } from './pg/queue-table.js';
import { NARROW_ROWS, ONE_SERVICE_PER_URL } from './first-steps.js';
import {
  APPROVAL_RULES,
  APPROVALS,
  ATTEMPTS,
  INTENTS,
  JOURNAL,
  JOURNAL_RETRY_OF,
  LOCKS,
  META,
  PAYOUT_COLUMNS,
  PAYOUTS,
  PAYOUTS_REFERENCE,
  PAYOUTS_V1,
  PREPARED_PAYOUTS,
  PREPARED_RUNS,
  REPORTS,
  RESULTS,
  RUN_COUNTS,
  RUNS,
  RUNS_SERVICE,
  WITHDRAWALS,
} from './tables.js';

const MASKED = 'payouts send (a command line recorded before passwords were masked)';

/**
 * Every step, in order. To add a table: append `{ ops: [{ table: DEF }, { index: … }] }` with
 * DEF a TableDef in tables.ts; to change one, append a step (a new column: `{ sql: 'ALTER TABLE …
 * ADD COLUMN …' }`) and leave the definitions of earlier steps as they are.
 */
export const STEPS: readonly SchemaStep[] = [
  {
    only: 'sqlite',
    ops: [
      { table: META },
      { table: RUNS },
      { index: RUNS_SERVICE },
      { table: PAYOUTS_V1 },
      { index: PAYOUTS_REFERENCE },
    ],
  },
  {
    only: 'sqlite',
    ops: [
      { table: INTENTS },
      { table: RESULTS },
      { table: REPORTS },
      { sql: NARROW_ROWS },
      { table: PAYOUTS, as: 'payouts_v2' },
      {
        sql: `INSERT INTO payouts_v2 SELECT ${PAYOUT_COLUMNS.map(([c]) => c).join(', ')} FROM payouts;
  DROP TABLE payouts;
  ALTER TABLE payouts_v2 RENAME TO payouts`,
      },
      { index: PAYOUTS_REFERENCE },
      JOURNAL,
    ],
  },
  { only: 'sqlite', ops: [{ sql: ONE_SERVICE_PER_URL }] },
  {
    only: 'pg',
    ops: [
      { table: META },
      { table: RUNS },
      { index: RUNS_SERVICE },
      { table: PAYOUTS },
      { index: PAYOUTS_REFERENCE },
      { table: INTENTS },
      { table: RESULTS },
      { table: REPORTS },
      JOURNAL,
      { table: LOCKS },
    ],
  },
  // Who sent each run; on PostgreSQL, also which run a lock's holder sends, from which session.
  {
    ops: [
      { sql: 'ALTER TABLE runs ADD COLUMN host TEXT' },
      { sql: 'ALTER TABLE runs ADD COLUMN os_user TEXT' },
      { sql: 'ALTER TABLE runs ADD COLUMN db_user TEXT' },
      { pg: 'ALTER TABLE locks ADD COLUMN db_user TEXT' },
      { pg: 'ALTER TABLE locks ADD COLUMN run_id TEXT' },
      { pg: "ALTER TABLE locks ADD COLUMN phase TEXT NOT NULL DEFAULT 'sending'" },
      { pg: 'ALTER TABLE locks ADD COLUMN backend_pid INTEGER' },
    ],
  },
  // Approvals (docs/approvals.md): used on a shared history only, where PostgreSQL keeps the rules.
  {
    ops: [
      { table: APPROVAL_RULES },
      {
        index: { name: 'approval_rules_service', table: 'approval_rules', columns: ['service_id'] },
      },
      { table: PREPARED_RUNS },
      {
        index: {
          name: 'prepared_runs_content',
          table: 'prepared_runs',
          columns: ['service_id', 'content_hash'],
        },
      },
      { table: PREPARED_PAYOUTS },
      { table: APPROVALS },
      { index: { name: 'approvals_prep', table: 'approvals', columns: ['prep'] } },
      { pg: APPROVAL_GUARDS },
    ],
  },
  // Issue 39: the rules hold whatever a person's role is granted short of owning the tables
  // (pg/guards.ts: fixed search_path, history append-only, figures checked); N approvers.
  {
    ops: [
      { sql: 'ALTER TABLE approval_rules ADD COLUMN approvers INTEGER NOT NULL DEFAULT 1' },
      { sql: 'ALTER TABLE prepared_runs ADD COLUMN xact BIGINT' },
      { pg: GUARDS },
    ],
  },
  // Retries (docs/history.md): the reference a row retries, so a payout and its retries are one.
  {
    ops: [
      { sql: 'ALTER TABLE payouts ADD COLUMN retry_of TEXT' },
      { index: { name: 'payouts_retry_of', table: 'payouts', columns: ['retry_of'] } },
      { sqlite: 'DROP VIEW journal' },
      { sqlite: `CREATE VIEW journal AS\n${JOURNAL_RETRY_OF}` },
      { pg: `CREATE OR REPLACE VIEW journal AS\n${JOURNAL_RETRY_OF}` },
    ],
  },
  // Recipients a service paid before (a summary's new recipients, the approver's screen).
  { ops: [{ index: { name: 'payouts_recipient', table: 'payouts', columns: ['recipient'] } }] },
  // A retry prepared for approval keeps the reference it retries (docs/approvals.md).
  { ops: [{ sql: 'ALTER TABLE prepared_payouts ADD COLUMN retry_of TEXT' }] },
  // The rule of approvals is written by the tables' owner only, whatever a person is granted.
  { ops: [{ pg: RULE_OWNER }] },
  // A service is its identity (serviceIdentity), so runs sent to http://127.0.0.1:P are runs
  // of http://localhost:P too: the client rewrites runs.service_id (docs/history.md).
  { ops: [], client: 'service_ids' },
  // A lock row's command line held a --state-url's password; rows are masked since (issue 48).
  { ops: [{ pg: `UPDATE locks SET command = '${MASKED}' WHERE command ~* '://|password='` }] },
  // How a run's CSV input was read (delimiter, decimal mark), for its later retry files.
  { ops: [{ sql: 'ALTER TABLE runs ADD COLUMN csv_style TEXT' }] },
  // Sends waiting for a lock queue; a lock's row says where its pid means (pg/service-lock.ts).
  { ops: [{ pg: LOCK_WAITERS }, { pg: 'ALTER TABLE locks ADD COLUMN scope TEXT' }] },
  // A history of millions costs nothing to daily commands: runs a page at a time, each run's
  // counts kept as of its last commit (run-counts.ts).
  {
    ops: [
      { index: { name: 'runs_updated', table: 'runs', columns: ['updated_at', 'id'] } },
      { sql: 'ALTER TABLE runs ADD COLUMN commits INTEGER NOT NULL DEFAULT 0' },
      { table: RUN_COUNTS },
      // A cache of what anyone may count: every role keeps it (docs/journal.md).
      { pg: 'GRANT SELECT, INSERT, UPDATE ON run_counts TO PUBLIC' },
    ],
  },
  // Issue 48: every request's payouts kept, append-only (intents taken as they were: each an
  // attempt, a free one withdrawn).
  {
    ops: [
      { table: ATTEMPTS },
      { table: WITHDRAWALS },
      {
        sql: `INSERT INTO attempts (run, row, req, at, session)
    SELECT run, row, coalesce(req, -1), coalesce(sent_at, updated_at, ''), 'history' FROM intents;
  INSERT INTO withdrawals (run, row, req, at, session)
    SELECT run, row, coalesce(req, -1), coalesce(updated_at, ''), 'history' FROM intents
    WHERE state = 'free'`,
      },
      { pg: ATTEMPTS_KEPT },
    ],
  },
  // Issue 48: who recorded a result or sent a run is the database's (session_user; null in state.db).
  { ops: [{ sql: 'ALTER TABLE results ADD COLUMN by_role TEXT' }, { pg: RECORDER }] },
  // The options a run's (or a prepared run's) files were read with, for the send commands
  // that finish it (`payouts runs`) or send it (`approve`).
  {
    ops: [
      { sql: 'ALTER TABLE prepared_runs ADD COLUMN send_args TEXT' },
      { sql: 'ALTER TABLE runs ADD COLUMN send_args TEXT' },
    ],
  },
  // Issue 49: a decision keeps the approver's screen it was made on, in its own row of
  // approvals, append-only as every row there (docs/approvals.md).
  { ops: [{ sql: 'ALTER TABLE approvals ADD COLUMN review TEXT' }] },
  // Issue 47: the service's later word on each payout, appended (checks-table.ts).
  CHECKS_STEP,
];

/** state.db's steps: step i takes `PRAGMA user_version` from i to i + 1. */
export const MIGRATIONS: readonly string[] = migrationsFor(STEPS, 'sqlite');

/** A shared history's steps: step i takes `schema_version` from i to i + 1. */
export const PG_MIGRATIONS: readonly string[] = migrationsFor(STEPS, 'pg');
