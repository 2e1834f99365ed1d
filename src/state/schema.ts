/**
 * The schema of state.db, as migrations: step i takes `PRAGMA user_version` from i to i + 1.
 * Steps are only ever appended; docs/journal.md describes the tables for auditors.
 */
export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
  );
  CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    run_id TEXT UNIQUE,
    service_id TEXT,
    service TEXT,
    client_id TEXT,
    inputs TEXT NOT NULL,
    input_hash TEXT,
    payout_count INTEGER NOT NULL DEFAULT 0,
    batch_reference TEXT,
    last_req INTEGER NOT NULL DEFAULT 0,
    staged_by INTEGER,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  );
  CREATE INDEX runs_service ON runs (service_id);
  CREATE TABLE payouts (
    run INTEGER NOT NULL,
    row INTEGER NOT NULL,
    reference_id TEXT NOT NULL,
    file TEXT,
    line INTEGER,
    location TEXT,
    amount TEXT,
    currency TEXT,
    recipient TEXT,
    description TEXT,
    hash TEXT,
    hash_version INTEGER NOT NULL,
    state TEXT NOT NULL DEFAULT 'queued'
      CHECK (state IN ('queued', 'in_flight', 'done', 'free', 'unknown')),
    req INTEGER,
    sent_at TEXT,
    status TEXT,
    transaction_id TEXT,
    charges TEXT,
    message TEXT,
    note TEXT,
    outcome_status TEXT,
    outcome_transaction_id TEXT,
    outcome_charges TEXT,
    outcome_message TEXT,
    sent_earlier INTEGER NOT NULL DEFAULT 0,
    updated_at TEXT,
    PRIMARY KEY (run, row)
  );
  CREATE UNIQUE INDEX payouts_reference ON payouts (reference_id, run);
  `,
];
