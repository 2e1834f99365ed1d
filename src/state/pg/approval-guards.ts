/**
 * The SQL of the step that first made the approval rules (schema.ts), word for word: guards.ts's
 * later step replaced its functions with fixed search_paths, but a step's SQL never changes
 * once a database has applied it.
 */
import { DECISION_LOCK_CLASS } from './guards.js';

/** The server's time as the history writes times: ISO 8601, UTC, milliseconds. */
const PG_NOW = `to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * The approvals step's rules, as that step made them (GUARDS below replaced its functions
 * with fixed search_paths; a step's SQL never changes): PostgreSQL keeps them whatever the client: the approval tables are append-only; who
 * wrote a row is the session's role; a preparer never decides on their own run; a run is
 * decided once, before it expires, and sent only once approved.
 */
export const APPROVAL_GUARDS = `
CREATE FUNCTION payouts_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'payouts: % rows are never changed or deleted', TG_TABLE_NAME
    USING ERRCODE = '42501';
END $$;
CREATE TRIGGER approval_rules_append_only BEFORE UPDATE OR DELETE ON approval_rules
  FOR EACH ROW EXECUTE FUNCTION payouts_append_only();
CREATE TRIGGER approval_rules_no_truncate BEFORE TRUNCATE ON approval_rules
  FOR EACH STATEMENT EXECUTE FUNCTION payouts_append_only();
CREATE TRIGGER prepared_runs_append_only BEFORE UPDATE OR DELETE ON prepared_runs
  FOR EACH ROW EXECUTE FUNCTION payouts_append_only();
CREATE TRIGGER prepared_runs_no_truncate BEFORE TRUNCATE ON prepared_runs
  FOR EACH STATEMENT EXECUTE FUNCTION payouts_append_only();
CREATE TRIGGER prepared_payouts_append_only BEFORE UPDATE OR DELETE ON prepared_payouts
  FOR EACH ROW EXECUTE FUNCTION payouts_append_only();
CREATE TRIGGER prepared_payouts_no_truncate BEFORE TRUNCATE ON prepared_payouts
  FOR EACH STATEMENT EXECUTE FUNCTION payouts_append_only();
CREATE TRIGGER approvals_append_only BEFORE UPDATE OR DELETE ON approvals
  FOR EACH ROW EXECUTE FUNCTION payouts_append_only();
CREATE TRIGGER approvals_no_truncate BEFORE TRUNCATE ON approvals
  FOR EACH STATEMENT EXECUTE FUNCTION payouts_append_only();
CREATE FUNCTION payouts_rule_set() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.set_by := session_user;
  NEW.at := ${PG_NOW};
  RETURN NEW;
END $$;
CREATE TRIGGER approval_rules_who BEFORE INSERT ON approval_rules
  FOR EACH ROW EXECUTE FUNCTION payouts_rule_set();
CREATE FUNCTION payouts_prepared() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE days INTEGER;
BEGIN
  SELECT expires_days INTO days FROM approval_rules WHERE service_id = NEW.service_id
    ORDER BY id DESC LIMIT 1;
  NEW.prepared_by := session_user;
  NEW.created_at := ${PG_NOW};
  NEW.expires_at := to_char((now() + make_interval(days => coalesce(days, 7))) AT TIME ZONE 'UTC',
    'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
  RETURN NEW;
END $$;
CREATE TRIGGER prepared_runs_who BEFORE INSERT ON prepared_runs
  FOR EACH ROW EXECUTE FUNCTION payouts_prepared();
CREATE FUNCTION payouts_decided() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE p prepared_runs%ROWTYPE;
BEGIN
  NEW.by_role := session_user;
  NEW.at := ${PG_NOW};
  SELECT * INTO p FROM prepared_runs WHERE id = NEW.prep;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'payouts: no prepared run has id %', NEW.prep USING ERRCODE = '23503';
  END IF;
  -- One decision at a time per prepared run, so two approvers cannot both be first.
  PERFORM pg_advisory_xact_lock(${DECISION_LOCK_CLASS}, NEW.prep);
  IF NEW.decision = 'sent' THEN
    IF NOT EXISTS (SELECT 1 FROM approvals WHERE prep = NEW.prep AND decision = 'approved') THEN
      RAISE EXCEPTION 'payouts: run % is not approved', p.prep_id USING ERRCODE = '42501';
    END IF;
    RETURN NEW;
  END IF;
  IF p.prepared_by = session_user THEN
    RAISE EXCEPTION 'payouts: % prepared run % and cannot approve or reject it: another role must',
      session_user, p.prep_id USING ERRCODE = '42501';
  END IF;
  IF EXISTS (SELECT 1 FROM approvals WHERE prep = NEW.prep) THEN
    RAISE EXCEPTION 'payouts: run % was already approved, rejected or sent', p.prep_id
      USING ERRCODE = '42501';
  END IF;
  IF p.expires_at < NEW.at THEN
    RAISE EXCEPTION 'payouts: run % expired at %', p.prep_id, p.expires_at USING ERRCODE = '42501';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER approvals_who BEFORE INSERT ON approvals
  FOR EACH ROW EXECUTE FUNCTION payouts_decided()`;
