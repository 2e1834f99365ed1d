/**
 * The tables and views of a history as data, each as it was when a step made it, apart from
 * the steps that make them (schema.ts), so that the migrations read as a list.
 */
import type { IndexDef, TableDef } from './dialect.js';

export const META: TableDef = {
  name: 'meta',
  columns: [
    ['key', 'text', 'PRIMARY KEY'],
    ['value', 'text', 'NOT NULL'],
  ],
};

export const RUNS: TableDef = {
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
export const PAYOUT_COLUMNS = [
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

export const PAYOUTS: TableDef = {
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
export const PAYOUTS_V1: TableDef = {
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
export const LOCKS: TableDef = {
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
export const APPROVAL_RULES: TableDef = {
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
export const PREPARED_RUNS: TableDef = {
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
export const PREPARED_PAYOUTS: TableDef = {
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
export const APPROVALS: TableDef = {
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

/** A run's counts as `payouts runs` lists them, as of its `commits`-th commit. */
export const RUN_COUNTS: TableDef = {
  name: 'run_counts',
  columns: [
    ['run', 'int', 'PRIMARY KEY'],
    ['commits', 'int', 'NOT NULL'],
    ...(['success', 'failed', 'canceled', 'pending', 'in_flight', 'sent_earlier'] as const).map(
      (c) => [c, 'int', 'NOT NULL'] as const,
    ),
  ],
};

export const RUNS_SERVICE: IndexDef = {
  name: 'runs_service',
  table: 'runs',
  columns: ['service_id'],
};
export const PAYOUTS_REFERENCE: IndexDef = {
  name: 'payouts_reference',
  table: 'payouts',
  columns: ['reference_id', 'run'],
  unique: true,
};

/** One row per payout, with its state as step 1 had it. */
export const JOURNAL = {
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
export const JOURNAL_RETRY_OF = JOURNAL.select.replace(
  'coalesce(d.at, i.updated_at) AS updated_at',
  'coalesce(d.at, i.updated_at) AS updated_at, p.retry_of',
);
