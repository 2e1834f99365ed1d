/**
 * What a shared history keeps of the service's later word on its payouts (`checks`, issue 47),
 * whatever a person's role is granted short of owning the tables: rows are only ever added,
 * each naming the role that added it (`session_user`, not what the client writes); the roles
 * that record results may add and read them, so `status` and `reconcile` record as they read.
 */
import { fn, inSchema, refuse } from './guards.js';

export const CHECKS_KEPT = `${inSchema([
  fn(
    'payouts_check_kept',
    `  SELECT c.relowner INTO tbl_owner FROM pg_catalog.pg_class c WHERE c.oid = TG_RELID;
  IF NOT pg_catalog.pg_has_role(session_user, tbl_owner, 'MEMBER') THEN
    ${refuse('checks rows are what the service answered: only the owner of the tables changes or deletes them, not role %', 'session_user')}
  END IF;
  IF TG_LEVEL = 'STATEMENT' THEN RETURN NULL; END IF;
  IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
  RETURN NEW;`,
    'tbl_owner OID;',
  ),
  fn('payouts_check_by', '  NEW.by_role := session_user;\n  RETURN NEW;'),
])};
CREATE TRIGGER checks_kept BEFORE UPDATE OR DELETE ON checks
  FOR EACH ROW EXECUTE FUNCTION payouts_check_kept();
CREATE TRIGGER checks_kept_truncate BEFORE TRUNCATE ON checks
  FOR EACH STATEMENT EXECUTE FUNCTION payouts_check_kept();
CREATE TRIGGER checks_by BEFORE INSERT ON checks
  FOR EACH ROW EXECUTE FUNCTION payouts_check_by();
DO $grant$
DECLARE g RECORD;
BEGIN
  FOR g IN SELECT DISTINCT a.grantee FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a
      WHERE c.oid = 'results'::regclass AND a.privilege_type = 'INSERT' AND a.grantee <> c.relowner LOOP
    EXECUTE format('GRANT SELECT, INSERT ON checks TO %s',
      CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_catalog.pg_get_userbyid(g.grantee)) END);
  END LOOP;
END $grant$`;
