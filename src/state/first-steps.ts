/**
 * The SQL of state.db's first steps (schema.ts's STEPS), word for word: a step's SQL never
 * changes once a database has applied it. They came before PostgreSQL, which never runs them.
 */

/** Step 2's move of the wide rows into the narrow tables. */
export const NARROW_ROWS = `
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
export const ONE_SERVICE_PER_URL = `
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
