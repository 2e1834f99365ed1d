/**
 * The schema of state.db, as migrations: step i takes `PRAGMA user_version` from i to i + 1.
 * Steps are only ever appended; docs/journal.md describes the tables for auditors.
 *
 * Since step 2 a payout's row is written once (pass 1); what happens to it goes to narrow
 * tables of its own, appended as it happens: `intents` (sent, freed, unknown), `results`
 * (what the service stated) and `reports` (the last send's outcome where it is not the stated
 * result). The view `journal` puts them together, one row per payout, as step 1 had them.
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
  `
  CREATE TABLE intents (
    run INTEGER NOT NULL,
    row INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('in_flight', 'free', 'unknown')),
    req INTEGER,
    sent_at TEXT,
    note TEXT,
    updated_at TEXT,
    PRIMARY KEY (run, row)
  ) WITHOUT ROWID;
  CREATE TABLE results (
    run INTEGER NOT NULL,
    row INTEGER NOT NULL,
    req INTEGER,
    status TEXT NOT NULL,
    transaction_id TEXT,
    charges TEXT,
    message TEXT,
    at TEXT,
    PRIMARY KEY (run, row)
  ) WITHOUT ROWID;
  CREATE TABLE reports (
    run INTEGER NOT NULL,
    row INTEGER NOT NULL,
    status TEXT NOT NULL,
    transaction_id TEXT,
    charges TEXT,
    message TEXT,
    sent_earlier INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run, row)
  ) WITHOUT ROWID;
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
    FROM payouts WHERE outcome_status IS NOT NULL;
  CREATE TABLE payouts_v2 (
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
    PRIMARY KEY (run, row)
  ) WITHOUT ROWID;
  INSERT INTO payouts_v2
    SELECT run, row, reference_id, file, line, location, amount, currency, recipient,
      description, hash, hash_version
    FROM payouts;
  DROP TABLE payouts;
  ALTER TABLE payouts_v2 RENAME TO payouts;
  CREATE UNIQUE INDEX payouts_reference ON payouts (reference_id, run);
  CREATE VIEW journal AS
    SELECT p.run, p.row, p.reference_id, p.file, p.line, p.location, p.amount, p.currency,
      p.recipient, p.description, p.hash, p.hash_version,
      CASE WHEN d.row IS NOT NULL THEN 'done' ELSE coalesce(i.state, 'queued') END AS state,
      coalesce(d.req, i.req) AS req, i.sent_at, d.status, d.transaction_id, d.charges,
      d.message, CASE WHEN d.row IS NULL THEN i.note END AS note,
      coalesce(d.at, i.updated_at) AS updated_at
    FROM payouts p
      LEFT JOIN intents i ON i.run = p.run AND i.row = p.row
      LEFT JOIN results d ON d.run = p.run AND d.row = p.row;
  `,
  // Step 3: a service is its base URL alone (it was the base URL and the Client-Id), so runs
  // under every Client-Id share one history and one lock. runs.service already holds the base
  // URL (or "sandbox") and runs.client_id the key each run used; the ids are derived afresh.
  // Runs of the same input under two keys become one id: the newest keeps it, older ones get
  // the suffix a superseded run gets.
  `
  CREATE TEMP TABLE run_ids AS
    SELECT id, sha256_16(service || char(10) || input_hash) AS run_id,
      id = max(id) OVER (PARTITION BY service, input_hash, length(run_id) = 16) AND length(run_id) = 16 AS newest
    FROM runs WHERE run_id IS NOT NULL AND service IS NOT NULL AND input_hash IS NOT NULL;
  UPDATE runs SET service_id = sha256_16(service) WHERE service IS NOT NULL;
  UPDATE runs SET run_id = (SELECT run_id || '-' || runs.id FROM run_ids WHERE run_ids.id = runs.id)
    WHERE id IN (SELECT id FROM run_ids);
  UPDATE runs SET run_id = (SELECT run_id FROM run_ids WHERE run_ids.id = runs.id)
    WHERE id IN (SELECT id FROM run_ids WHERE newest);
  DROP TABLE temp.run_ids;
  `,
];
