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
import { CHECKS_KEPT } from './pg/checks-guards.js';
import { APPROVAL_GUARDS, GUARDS, RULE_OWNER } from './pg/guards.js';
import { LOCK_WAITERS } from './pg/queue-table.js';

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
 * The view `journal` with each payout's latest word from the service (`checks`): a payout it
 * holds takes the word's status and transaction id (the result's message only while the status
 * is the result's), and one in doubt is done; "not found" changes neither, it is told by
 * `missing`. `checked_at` and `checked_by` say when and how the latest word came. A word counts
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
    c.updated_at AS service_updated_at
  FROM payouts p
    LEFT JOIN intents i ON i.run = p.run AND i.row = p.row
    LEFT JOIN results d ON d.run = p.run AND d.row = p.row
    LEFT JOIN checks c ON c.id = (SELECT max(x.id) FROM checks x
      WHERE x.run = p.run AND x.row = p.row)
      AND (d.row IS NOT NULL OR i.state IN ('in_flight', 'unknown'))`;

/** Step 2's move of the wide rows into the narrow tables. */
const NARROW_ROWS = `
  INSERT INTO intents
    SELECT run, row, CASE state WHEN 'done' THEN 'in_flight' ELSE state END, req, sent_at, note,
      updated_at
    FROM payouts WHERE state != 'queued' AND (state != 'done' OR sent_at IS NOT NULL);
  INSERT INTO results
    SELECT run, row, req, status, transaction_id, charges, message, updated_at
    FROM payouts WHERE state = 'done';
  INSERT INTO reports
    SELECT run, row, outcome_status, outcome_transaction_id, outcome_charges, outcome_message,
      sent_earlier
    FROM payouts WHERE outcome_status IS NOT NULL;`;

/**
 * Step 3: a service is its base URL alone (it was the base URL and the Client-Id), so runs
 * under every Client-Id share one history and one lock. runs.service already holds the base
 * URL (or "sandbox") and runs.client_id the key each run used; the ids are derived afresh.
 * Runs of the same input under two keys become one id: the newest keeps it, older ones get
 * the suffix a superseded run gets.
 */
const ONE_SERVICE_PER_URL = `
  CREATE TEMP TABLE run_ids AS
    SELECT id, sha256_16(service || char(10) || input_hash) AS run_id,
      id = max(id) OVER (PARTITION BY service, input_hash, length(run_id) = 16) AND length(run_id) = 16 AS newest
    FROM runs WHERE run_id IS NOT NULL AND service IS NOT NULL AND input_hash IS NOT NULL;
  UPDATE runs SET service_id = sha256_16(service) WHERE service IS NOT NULL;
  UPDATE runs SET run_id = (SELECT run_id || '-' || runs.id FROM run_ids WHERE run_ids.id = runs.id)
    WHERE id IN (SELECT id FROM run_ids);
  UPDATE runs SET run_id = (SELECT run_id FROM run_ids WHERE run_ids.id = runs.id)
    WHERE id IN (SELECT id FROM run_ids WHERE newest);
  DROP TABLE temp.run_ids`;

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
  // Issue 47: the service's later word on each payout, appended; every reader of the journal
  // takes the latest, and a run's kept counts are as of its latest word too (run-counts.ts).
  {
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
  },
];

/** state.db's steps: step i takes `PRAGMA user_version` from i to i + 1. */
export const MIGRATIONS: readonly string[] = migrationsFor(STEPS, 'sqlite');

/** A shared history's steps: step i takes `schema_version` from i to i + 1. */
export const PG_MIGRATIONS: readonly string[] = migrationsFor(STEPS, 'pg');
