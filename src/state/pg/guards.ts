/**
 * The rules a shared history keeps whatever a person's role is granted short of owning the
 * tables (docs/approvals.md, "What the database keeps"), as one migration step's SQL.
 *
 * Every function runs with a fixed search_path (pg_catalog, the history's schema, pg_temp
 * last) and names its tables with the schema, so a person's temporary tables cannot stand in
 * for them. The schema is the migrating session's current_schema(), written into each
 * function when it is made: a migration runs a DO block that EXECUTEs each text with `@S@`
 * replaced by it.
 */

/** The first key of a prepared run's decision lock ("payp"), apart from the services' locks. */
export const DECISION_LOCK_CLASS = 0x70617970;

/** The server's time as the history writes times: ISO 8601, UTC, milliseconds. */
const NOW = `pg_catalog.to_char(pg_catalog.now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** A service's id from its key, as serviceId() makes it: 16 hex digits of SHA-256. */
const SERVICE_ID = (key: string) =>
  `pg_catalog.left(pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to(${key}, 'UTF8')), 'hex'), 16)`;

/** A trigger function of the history's schema, with the fixed search_path. */
function fn(name: string, body: string, declare = ''): string {
  return `CREATE OR REPLACE FUNCTION @S@.${name}() RETURNS trigger LANGUAGE plpgsql
  SET search_path = pg_catalog, @S@, pg_temp AS $$
${declare ? `DECLARE ${declare}\n` : ''}BEGIN
${body}
END $$`;
}

/** Raises a refusal in the words the client shows ("payouts: …"). */
const refuse = (text: string, args = '', code = '42501') =>
  `RAISE EXCEPTION 'payouts: ${text}'${args ? `, ${args}` : ''} USING ERRCODE = '${code}';`;

/**
 * A trigger's refusal unless its session is a member of the role that owns the table (the
 * tables' owner, a superuser); the function declares `tbl_owner OID`.
 */
const unlessOwner = (refusal: string) =>
  `  SELECT c.relowner INTO tbl_owner FROM pg_catalog.pg_class c WHERE c.oid = TG_RELID;
  IF NOT pg_catalog.pg_has_role(session_user, tbl_owner, 'MEMBER') THEN
    ${refusal}
  END IF;`;

/** What a rule row is given whoever writes it: who set it, when, and its service's id. */
const RULE_ROW = `  NEW.set_by := session_user;
  NEW.at := ${NOW};
  NEW.service_id := ${SERVICE_ID('NEW.service')};
  IF NEW.approvers IS NULL OR NEW.approvers < 1 THEN
    ${refuse('a rule needs at least one approver')}
  END IF;
  RETURN NEW;`;

const FUNCTIONS = [
  fn('payouts_append_only', refuse('% rows are never changed or deleted', 'TG_TABLE_NAME')),
  fn(
    'payouts_history_kept',
    refuse('% rows are the history of what was sent: never deleted', 'TG_TABLE_NAME'),
  ),
  fn('payouts_rule_set', RULE_ROW),
  fn(
    'payouts_prepared',
    `  NEW.service_id := ${SERVICE_ID('NEW.service')};
  SELECT r.expires_days INTO days FROM @S@.approval_rules r WHERE r.service_id = NEW.service_id
    ORDER BY r.id DESC LIMIT 1;
  NEW.prepared_by := session_user;
  NEW.created_at := ${NOW};
  NEW.expires_at := pg_catalog.to_char((pg_catalog.now()
    + pg_catalog.make_interval(days => coalesce(days, 7))) AT TIME ZONE 'UTC',
    'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
  NEW.xact := pg_catalog.txid_current();
  RETURN NEW;`,
    'days INTEGER;',
  ),
  // At commit: the prepared run's count and totals are those of its payouts.
  fn(
    'payouts_prepared_figures',
    `  SELECT pg_catalog.count(*) INTO n FROM @S@.prepared_payouts x WHERE x.prep = NEW.id;
  IF n = 0 OR n <> NEW.payout_count THEN
    ${refuse('prepared run % says % payouts and holds %', 'NEW.prep_id, NEW.payout_count, n', '23514')}
  END IF;
  IF EXISTS (SELECT 1 FROM
      (SELECT x.currency, pg_catalog.count(*) AS c, pg_catalog.sum(x.amount::numeric) AS t
        FROM @S@.prepared_payouts x WHERE x.prep = NEW.id GROUP BY x.currency) a
      FULL JOIN (SELECT j.key AS currency, (j.value ->> 'count')::bigint AS c,
        (j.value ->> 'total')::numeric AS t FROM pg_catalog.json_each(NEW.totals::json) j) b
      USING (currency)
      WHERE a.c IS DISTINCT FROM b.c OR a.t IS DISTINCT FROM b.t) THEN
    ${refuse('the totals of prepared run % are not those of its payouts', 'NEW.prep_id', '23514')}
  END IF;
  RETURN NULL;`,
    'n BIGINT;',
  ),
  // Payouts join a prepared run only in the transaction that records it.
  fn(
    'payouts_prepared_payout',
    `  SELECT p.xact INTO x FROM @S@.prepared_runs p WHERE p.id = NEW.prep;
  IF x IS NULL OR x <> pg_catalog.txid_current() THEN
    ${refuse('payouts join prepared run id % only as it is recorded, never later', 'NEW.prep')}
  END IF;
  RETURN NEW;`,
    'x BIGINT;',
  ),
  // After each statement: no prepared run holds more payouts than it says, so once its
  // figures were checked (at commit, or at once under SET CONSTRAINTS) none can be added.
  fn(
    'payouts_prepared_bound',
    `  SELECT p.prep_id, p.payout_count, (SELECT pg_catalog.count(*) FROM @S@.prepared_payouts x
      WHERE x.prep = p.id) INTO r
    FROM @S@.prepared_runs p WHERE p.id IN (SELECT a.prep FROM added a)
      AND (SELECT pg_catalog.count(*) FROM @S@.prepared_payouts x WHERE x.prep = p.id) > p.payout_count
    LIMIT 1;
  IF FOUND THEN
    ${refuse('prepared run % says % payouts and holds %', 'r.prep_id, r.payout_count, r.count', '23514')}
  END IF;
  RETURN NULL;`,
    'r RECORD;',
  ),
  fn(
    'payouts_decided',
    `  NEW.by_role := session_user;
  NEW.at := ${NOW};
  SELECT * INTO p FROM @S@.prepared_runs WHERE id = NEW.prep;
  IF NOT FOUND THEN
    ${refuse('no prepared run has id %', 'NEW.prep', '23503')}
  END IF;
  -- One decision at a time per prepared run, so two approvers cannot both be first.
  PERFORM pg_catalog.pg_advisory_xact_lock(${DECISION_LOCK_CLASS}, NEW.prep);
  SELECT r.approvers INTO need FROM @S@.approval_rules r WHERE r.service_id = p.service_id
    ORDER BY r.id DESC LIMIT 1;
  need := greatest(coalesce(need, 1), 1);
  SELECT pg_catalog.count(DISTINCT a.by_role) INTO n FROM @S@.approvals a
    WHERE a.prep = NEW.prep AND a.decision = 'approved' AND a.by_role <> p.prepared_by;
  SELECT a.run_id INTO sent FROM @S@.approvals a WHERE a.prep = NEW.prep AND a.decision = 'sent';
  IF FOUND THEN
    ${refuse('run % was already approved, rejected or sent (sent by run %): an approval sends once', 'p.prep_id, sent')}
  END IF;
  IF EXISTS (SELECT 1 FROM @S@.approvals a WHERE a.prep = NEW.prep AND a.decision = 'rejected') THEN
    ${refuse('run % was already approved, rejected or sent (rejected)', 'p.prep_id')}
  END IF;
  IF NEW.decision = 'sent' THEN
    IF n < need THEN
      ${refuse('run % is not approved (% of % approvals by roles other than its preparer)', 'p.prep_id, n, need')}
    END IF;
    IF p.expires_at < NEW.at THEN
      ${refuse('the approval of run % expired at %', 'p.prep_id, p.expires_at')}
    END IF;
    IF NEW.run_id IS NULL THEN
      ${refuse('a sent event names the run that sends')}
    END IF;
    RETURN NEW;
  END IF;
  IF p.prepared_by = session_user THEN
    ${refuse('% prepared run % and cannot approve or reject it: another role must', 'session_user, p.prep_id')}
  END IF;
  IF n >= need THEN
    ${refuse('run % was already approved, rejected or sent', 'p.prep_id')}
  END IF;
  IF EXISTS (SELECT 1 FROM @S@.approvals a WHERE a.prep = NEW.prep AND a.by_role = session_user) THEN
    ${refuse('% already approved run %: another role must', 'session_user, p.prep_id')}
  END IF;
  IF p.expires_at < NEW.at THEN
    ${refuse('run % expired at %', 'p.prep_id, p.expires_at')}
  END IF;
  RETURN NEW;`,
    'p @S@.prepared_runs%ROWTYPE; need INTEGER; n INTEGER; sent TEXT;',
  ),
  // A run's header keeps what it sent and where; the send moves only its bookkeeping.
  fn(
    'payouts_run_kept',
    `  IF NEW.id <> OLD.id OR NEW.service_id IS DISTINCT FROM OLD.service_id
      OR NEW.service IS DISTINCT FROM OLD.service OR NEW.client_id IS DISTINCT FROM OLD.client_id
      OR NEW.inputs IS DISTINCT FROM OLD.inputs OR NEW.input_hash IS DISTINCT FROM OLD.input_hash
      OR NEW.payout_count IS DISTINCT FROM OLD.payout_count
      OR NEW.batch_reference IS DISTINCT FROM OLD.batch_reference
      OR NEW.created_at IS DISTINCT FROM OLD.created_at
      OR NEW.staged_by IS DISTINCT FROM OLD.staged_by
      OR NEW.last_req < OLD.last_req
      OR (NEW.run_id IS DISTINCT FROM OLD.run_id
        AND NEW.run_id IS DISTINCT FROM OLD.run_id || '-' || OLD.id) THEN
    ${refuse('run % of the history changes only its times, sender and last request (a superseded run its id)', 'OLD.run_id')}
  END IF;
  RETURN NEW;`,
  ),
  fn(
    'payouts_payout_kept',
    refuse('payouts rows are never changed (run %, row %)', 'OLD.run, OLD.row'),
  ),
  // An intent moves as a send moves it, and never once the payout has a result.
  fn(
    'payouts_intent_kept',
    `  IF NEW.run <> OLD.run OR NEW.row <> OLD.row OR EXISTS (SELECT 1 FROM @S@.results d
      WHERE d.run = OLD.run AND d.row = OLD.row) THEN
    ${refuse('the intent of run %, row % is history: a payout with a result, or another row, is never changed', 'OLD.run, OLD.row')}
  END IF;
  RETURN NEW;`,
  ),
  // A result is read again until it is final; a final one, or a transaction id, never changes.
  fn(
    'payouts_result_kept',
    `  IF NEW.run <> OLD.run OR NEW.row <> OLD.row
      OR (OLD.transaction_id IS NOT NULL AND NEW.transaction_id IS DISTINCT FROM OLD.transaction_id)
      OR (pg_catalog.lower(OLD.status) IN ('success', 'failed', 'canceled')
        AND NEW.status IS DISTINCT FROM OLD.status) THEN
    ${refuse('the result of run %, row % (%) is never changed', 'OLD.run, OLD.row, OLD.status')}
  END IF;
  RETURN NEW;`,
  ),
];

/** The statements of the step: the functions, made in the migrating session's schema. */
function inSchema(statements: string[]): string {
  const each = statements.map(
    (s) => `  EXECUTE replace($q$${s}$q$, '@S@', quote_ident(current_schema()));`,
  );
  return `DO $migrate$\nBEGIN\n${each.join('\n')}\nEND $migrate$`;
}

const KEPT = ['runs', 'payouts', 'intents', 'results'];

/**
 * Issue 39's step (PostgreSQL): the functions again with a fixed search_path and qualified
 * names, the prepared runs' figures checked at commit, payouts only while a run is recorded,
 * N approvers and one send per approval, and the history of what was sent append-only but for
 * the moves a send makes.
 */
export const GUARDS = `${inSchema(FUNCTIONS)};
CREATE CONSTRAINT TRIGGER prepared_runs_figures AFTER INSERT ON prepared_runs
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION payouts_prepared_figures();
CREATE TRIGGER prepared_payouts_joined BEFORE INSERT ON prepared_payouts
  FOR EACH ROW EXECUTE FUNCTION payouts_prepared_payout();
CREATE TRIGGER prepared_payouts_bound AFTER INSERT ON prepared_payouts
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION payouts_prepared_bound();
${KEPT.map(
  (t) => `CREATE TRIGGER ${t}_kept_delete BEFORE DELETE ON ${t}
  FOR EACH STATEMENT EXECUTE FUNCTION payouts_history_kept();
CREATE TRIGGER ${t}_kept_truncate BEFORE TRUNCATE ON ${t}
  FOR EACH STATEMENT EXECUTE FUNCTION payouts_history_kept();`,
).join('\n')}
CREATE TRIGGER runs_kept BEFORE UPDATE ON runs FOR EACH ROW EXECUTE FUNCTION payouts_run_kept();
CREATE TRIGGER payouts_kept BEFORE UPDATE ON payouts
  FOR EACH ROW EXECUTE FUNCTION payouts_payout_kept();
CREATE TRIGGER intents_kept BEFORE UPDATE ON intents
  FOR EACH ROW EXECUTE FUNCTION payouts_intent_kept();
CREATE TRIGGER results_kept BEFORE UPDATE ON results
  FOR EACH ROW EXECUTE FUNCTION payouts_result_kept()`;

/**
 * The rule is the tables' owner's (docs/approvals.md): a person granted INSERT on
 * approval_rules would otherwise turn it off, or raise its threshold, and CI would send
 * unapproved. A member of the table's owner (a superuser too) still sets it.
 */
export const RULE_OWNER = inSchema([
  fn(
    'payouts_rule_set',
    `${unlessOwner(refuse('only the owner of the tables changes the rule of approvals, not role %', 'session_user'))}
${RULE_ROW}`,
    'tbl_owner OID;',
  ),
]);

/**
 * Who the session is, as the server knows it: its process and when it began (unique while the
 * server runs, and across restarts). Attempts and withdrawals carry it, checked by a trigger.
 */
const SESSION = `CREATE OR REPLACE FUNCTION @S@.payouts_session() RETURNS text LANGUAGE sql STABLE
  SET search_path = pg_catalog, @S@, pg_temp AS $$
  SELECT pg_catalog.pg_backend_pid()::text || '@' || (SELECT pg_catalog.date_part('epoch', a.backend_start)::text
    FROM pg_catalog.pg_stat_get_activity(pg_catalog.pg_backend_pid()) a)
$$`;

const RECORDED = ['attempts', 'withdrawals'];

/**
 * Grants SELECT and INSERT on `tables` to every role but the owner granted INSERT on `like`,
 * so that a team's roles go on writing once the owner migrates.
 */
export const grantLike = (like: string, tables: string) => `DO $grant$
DECLARE g RECORD;
BEGIN
  FOR g IN SELECT DISTINCT a.grantee FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a
      WHERE c.oid = '${like}'::regclass AND a.privilege_type = 'INSERT' AND a.grantee <> c.relowner LOOP
    EXECUTE format('GRANT SELECT, INSERT ON ${tables} TO %s',
      CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_catalog.pg_get_userbyid(g.grantee)) END);
  END LOOP;
END $grant$`;

/**
 * Issue 48's step (PostgreSQL): `attempts` and `withdrawals` are append-only for every role but
 * the tables' owner, and each row names the session that inserts it, so no session but the one
 * that sent a request can withdraw it; the roles granted INSERT on `intents` get SELECT and
 * INSERT on both, so a team's sends go on after the owner migrates.
 */
export const ATTEMPTS_KEPT = `${inSchema([
  SESSION,
  fn(
    'payouts_owners_only',
    `${unlessOwner(refuse('% rows are the record of every request: only the owner of the tables changes or deletes them, not role %', 'TG_TABLE_NAME, session_user'))}
  IF TG_LEVEL = 'STATEMENT' THEN RETURN NULL; END IF;
  IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
  RETURN NEW;`,
    'tbl_owner OID;',
  ),
  fn(
    'payouts_own_session',
    `  me := @S@.payouts_session();
  IF EXISTS (SELECT 1 FROM added a WHERE a.session IS DISTINCT FROM me) THEN
    ${refuse('% rows name the session that inserts them (%), no other', 'TG_TABLE_NAME, me')}
  END IF;
  RETURN NULL;`,
    'me TEXT;',
  ),
])};
${RECORDED.map(
  (t) => `CREATE TRIGGER ${t}_kept BEFORE UPDATE OR DELETE ON ${t}
  FOR EACH ROW EXECUTE FUNCTION payouts_owners_only();
CREATE TRIGGER ${t}_kept_truncate BEFORE TRUNCATE ON ${t}
  FOR EACH STATEMENT EXECUTE FUNCTION payouts_owners_only();
CREATE TRIGGER ${t}_session AFTER INSERT ON ${t}
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION payouts_own_session();`,
).join('\n')}
${grantLike('intents', 'attempts, withdrawals')}`;

/**
 * Issue 48's second step (PostgreSQL): a result's `by_role` and a run's `db_user` are the
 * session's role whatever the client writes: a result's on every write, a run's when it is
 * recorded and whenever who sent it changes (its host, OS user or role), so a forged row names
 * its forger and a run resumed only to find everything sent keeps its sender.
 */
export const RECORDER = `${inSchema([
  fn('payouts_result_by', '  NEW.by_role := session_user;\n  RETURN NEW;'),
  fn(
    'payouts_run_by',
    `  IF TG_OP = 'INSERT' OR NEW.host IS DISTINCT FROM OLD.host
      OR NEW.os_user IS DISTINCT FROM OLD.os_user OR NEW.db_user IS DISTINCT FROM OLD.db_user THEN
    NEW.db_user := session_user;
  END IF;
  RETURN NEW;`,
  ),
])};
CREATE TRIGGER results_by BEFORE INSERT OR UPDATE ON results
  FOR EACH ROW EXECUTE FUNCTION payouts_result_by();
CREATE TRIGGER runs_by BEFORE INSERT OR UPDATE ON runs
  FOR EACH ROW EXECUTE FUNCTION payouts_run_by()`;
