/**
 * The schema of a history, written once for state.db (SQLite) and a shared history
 * (PostgreSQL): its tables as data (dialect.ts makes each dialect's DDL of them) and the steps
 * that migrate a database, only ever appended; docs/journal.md describes the tables for
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
import { type IndexDef, migrationsFor, type SchemaStep, type TableDef } from './dialect.js';
import { CHECKS_STEP } from './checks-table.js';
import { APPROVAL_GUARDS } from './pg/approval-guards.js';
import { ATTEMPTS_KEPT, GUARDS, RECORDER, RULE_OWNER } from './pg/guards.js';
import { LOCK_WAITERS } from './pg/queue-table.js';
import { NARROW_ROWS, ONE_SERVICE_PER_URL } from './first-steps.js';

const META: TableDef = {
  name: 'meta',
  columns: [
    ['key', 'text', 'PRIMARY KEY'],
    ['value', 'text', 'NOT NULL'],
  ],
};

const RUNS: TableDef = {
  name: 'runs',
  columns: [
    ['id', 'id'],
    ['run_id', 'text', 'UNIQUE'],
    ['service_id', 'text'],
    ['service', 'text'],
    ['client_id', 'text'],
    ['inputs', 'text', 'NOT NULL'],
    ['input_hash', 'text'],
    ['payout_count', 'int', 'NOT NULL DEFAULT 0'],
    ['batch_reference', 'text'],
    ['last_req', 'int', 'NOT NULL DEFAULT 0'],
    ['staged_by', 'int'],
    ['created_at', 'text', 'NOT NULL'],
    ['updated_at', 'text', 'NOT NULL'],
  ],
};

/** A payout as pass 1 read it: the columns every version of `payouts` starts with. */
const PAYOUT_COLUMNS = [
  ['run', 'int', 'NOT NULL'],
  ['row', 'int', 'NOT NULL'],
  ['reference_id', 'text', 'NOT NULL'],
  ['file', 'text'],
  ['line', 'int'],
  ['location', 'text'],
  ['amount', 'text'],
  ['currency', 'text'],
  ['recipient', 'text'],
  ['description', 'text'],
  ['hash', 'text'],
  ['hash_version', 'int', 'NOT NULL'],
] as const;

const BY_ROW = ['run', 'row'] as const;

const PAYOUTS: TableDef = {
  name: 'payouts',
  columns: PAYOUT_COLUMNS,
  primaryKey: BY_ROW,
  clustered: true,
};

/**
 * The payouts table as the steps leave it (a later step added `retry_of`): what inserts of
 * payouts are made from (journal-sql.ts). A step that adds a column adds it here too.
 */
export const PAYOUTS_NOW: TableDef = {
  ...PAYOUTS,
  columns: [...PAYOUT_COLUMNS, ['retry_of', 'text']],
};

/** Step 1's payouts: one wide row per payout, its state and outcome in it (gone since step 2). */
const PAYOUTS_V1: TableDef = {
  name: 'payouts',
  columns: [
    ...PAYOUT_COLUMNS,
    [
      'state',
      'text',
      "NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'in_flight', 'done', 'free', 'unknown'))",
    ],
    ['req', 'int'],
    ['sent_at', 'text'],
    ['status', 'text'],
    ['transaction_id', 'text'],
    ['charges', 'text'],
    ['message', 'text'],
    ['note', 'text'],
    ['outcome_status', 'text'],
    ['outcome_transaction_id', 'text'],
    ['outcome_charges', 'text'],
    ['outcome_message', 'text'],
    ['sent_earlier', 'int', 'NOT NULL DEFAULT 0'],
    ['updated_at', 'text'],
  ],
  primaryKey: BY_ROW,
};

export const INTENTS: TableDef = {
  name: 'intents',
  columns: [
    ['run', 'int', 'NOT NULL'],
    ['row', 'int', 'NOT NULL'],
    ['state', 'text', "NOT NULL CHECK (state IN ('in_flight', 'free', 'unknown'))"],
    ['req', 'int'],
    ['sent_at', 'text'],
    ['note', 'text'],
    ['updated_at', 'text'],
  ],
  primaryKey: BY_ROW,
  clustered: true,
};

export const RESULTS: TableDef = {
  name: 'results',
  columns: [
    ['run', 'int', 'NOT NULL'],
    ['row', 'int', 'NOT NULL'],
    ['req', 'int'],
    ['status', 'text', 'NOT NULL'],
    ['transaction_id', 'text'],
    ['charges', 'text'],
    ['message', 'text'],
    ['at', 'text'],
  ],
  primaryKey: BY_ROW,
  clustered: true,
};

export const REPORTS: TableDef = {
  name: 'reports',
  columns: [
    ['run', 'int', 'NOT NULL'],
    ['row', 'int', 'NOT NULL'],
    ['status', 'text', 'NOT NULL'],
    ['transaction_id', 'text'],
    ['charges', 'text'],
    ['message', 'text'],
    ['sent_earlier', 'int', 'NOT NULL DEFAULT 0'],
  ],
  primaryKey: BY_ROW,
  clustered: true,
};

/**
 * Every request's payouts, appended with its intent (issue 48), by `session` (on PostgreSQL the
 * server's name for it, payouts_session(), which a trigger checks; else the run's).
 */
export const ATTEMPTS: TableDef = {
  name: 'attempts',
  columns: [
    ['run', 'int', 'NOT NULL'],
    ['row', 'int', 'NOT NULL'],
    ['req', 'int', 'NOT NULL'],
    ['at', 'text', 'NOT NULL'],
    ['session', 'text', 'NOT NULL'],
  ],
  primaryKey: ['run', 'row', 'req'],
  clustered: true,
};

/** A request that never went or provably did not apply; only its own session's counts (lookupSql). */
export const WITHDRAWALS: TableDef = { ...ATTEMPTS, name: 'withdrawals' };

/** Who holds a service's advisory lock on PostgreSQL (its command line without passwords). */
const LOCKS: TableDef = {
  name: 'locks',
  columns: [
    ['service_id', 'text', 'PRIMARY KEY'],
    ['host', 'text', 'NOT NULL'],
    ['os_user', 'text', 'NOT NULL'],
    ['pid', 'int', 'NOT NULL'],
    ['started_at', 'text', 'NOT NULL'],
    ['command', 'text', 'NOT NULL'],
  ],
};

/** The approval rule of a service, one row per change: the latest is in force. */
const APPROVAL_RULES: TableDef = {
  name: 'approval_rules',
  columns: [
    ['id', 'id'],
    ['service_id', 'text', 'NOT NULL'],
    ['service', 'text', 'NOT NULL'],
    ['active', 'int', 'NOT NULL'],
    ['above', 'text'],
    ['expires_days', 'int', 'NOT NULL DEFAULT 7'],
    ['set_by', 'text', 'NOT NULL'],
    ['os_user', 'text'],
    ['host', 'text'],
    ['at', 'text', 'NOT NULL'],
  ],
};

/** A run prepared for approval: what would be sent, by whom, until when it may be approved. */
const PREPARED_RUNS: TableDef = {
  name: 'prepared_runs',
  columns: [
    ['id', 'id'],
    ['prep_id', 'text', 'NOT NULL UNIQUE'],
    ['service_id', 'text', 'NOT NULL'],
    ['service', 'text', 'NOT NULL'],
    ['inputs', 'text', 'NOT NULL'],
    ['content_hash', 'text', 'NOT NULL'],
    ['payout_count', 'int', 'NOT NULL'],
    ['totals', 'text', 'NOT NULL'],
    ['batch_reference', 'text'],
    ['webhook_url', 'text'],
    ['note', 'text'],
    ['prepared_by', 'text', 'NOT NULL'],
    ['os_user', 'text'],
    ['host', 'text'],
    ['created_at', 'text', 'NOT NULL'],
    ['expires_at', 'text', 'NOT NULL'],
  ],
};

/** The payouts of a prepared run, as `send --approved` sends them. */
const PREPARED_PAYOUTS: TableDef = {
  name: 'prepared_payouts',
  columns: [
    ['prep', 'int', 'NOT NULL'],
    ['row', 'int', 'NOT NULL'],
    ['reference_id', 'text', 'NOT NULL'],
    ['amount', 'text', 'NOT NULL'],
    ['currency', 'text', 'NOT NULL'],
    ['recipient', 'text', 'NOT NULL'],
    ['description', 'text'],
    ['hash', 'text', 'NOT NULL'],
  ],
  primaryKey: ['prep', 'row'],
  clustered: true,
};

/** What happened to a prepared run, appended: approved or rejected (once), then sent. */
const APPROVALS: TableDef = {
  name: 'approvals',
  columns: [
    ['id', 'id'],
    ['prep', 'int', 'NOT NULL'],
    ['decision', 'text', "NOT NULL CHECK (decision IN ('approved', 'rejected', 'sent'))"],
    ['reason', 'text'],
    ['by_role', 'text', 'NOT NULL'],
    ['os_user', 'text'],
    ['host', 'text'],
    ['run_id', 'text'],
    ['at', 'text', 'NOT NULL'],
  ],
};

const MASKED = 'payouts send (a command line recorded before passwords were masked)';

/** A run's counts as `payouts runs` lists them, as of its `commits`-th commit. */
const RUN_COUNTS: TableDef = {
  name: 'run_counts',
  columns: [
    ['run', 'int', 'PRIMARY KEY'],
    ['commits', 'int', 'NOT NULL'],
    ...(['success', 'failed', 'canceled', 'pending', 'in_flight', 'sent_earlier'] as const).map(
      (c) => [c, 'int', 'NOT NULL'] as const,
    ),
  ],
};

const RUNS_SERVICE: IndexDef = { name: 'runs_service', table: 'runs', columns: ['service_id'] };
const PAYOUTS_REFERENCE: IndexDef = {
  name: 'payouts_reference',
  table: 'payouts',
  columns: ['reference_id', 'run'],
  unique: true,
};

/** One row per payout, with its state as step 1 had it. */
const JOURNAL = {
  view: 'journal',
  select: `  SELECT p.run, p.row, p.reference_id, p.file, p.line, p.location, p.amount, p.currency,
    p.recipient, p.description, p.hash, p.hash_version,
    CASE WHEN d.row IS NOT NULL THEN 'done' ELSE coalesce(i.state, 'queued') END AS state,
    coalesce(d.req, i.req) AS req, i.sent_at, d.status, d.transaction_id, d.charges,
    d.message, CASE WHEN d.row IS NULL THEN i.note END AS note,
    coalesce(d.at, i.updated_at) AS updated_at
  FROM payouts p
    LEFT JOIN intents i ON i.run = p.run AND i.row = p.row
    LEFT JOIN results d ON d.run = p.run AND d.row = p.row`,
};

/**
 * The view `journal` with each payout's `retry_of` last: PostgreSQL replaces it in place,
 * keeping who may read it; SQLite has no such statement, and no grants to keep.
 */
const JOURNAL_RETRY_OF = JOURNAL.select.replace(
  'coalesce(d.at, i.updated_at) AS updated_at',
  'coalesce(d.at, i.updated_at) AS updated_at, p.retry_of',
);

/**
 * Every step, in order. To add a table: append `{ ops: [{ table: DEF }, { index: … }] }` with
 * DEF a TableDef above; to change one, append a step (a new column: `{ sql: 'ALTER TABLE …
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
  // Issue 48: a prepared run's webhook URL kept without its password, as every role reads it
  // (a shared history's; state.db keeps no prepared run).
  { ops: [], client: 'webhook_passwords' },
];

/** state.db's steps: step i takes `PRAGMA user_version` from i to i + 1. */
export const MIGRATIONS: readonly string[] = migrationsFor(STEPS, 'sqlite');

/** A shared history's steps: step i takes `schema_version` from i to i + 1. */
export const PG_MIGRATIONS: readonly string[] = migrationsFor(STEPS, 'pg');
