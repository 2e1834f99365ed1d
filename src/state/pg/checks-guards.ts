/**
 * What a shared history keeps of the service's later word on its payouts (`checks`, issue 47),
 * whatever a person's role is granted short of owning the tables, with the functions issue 48's
 * steps made (guards.ts): rows are only ever added (`payouts_owners_only`), each naming the
 * role that added it (`payouts_result_by`: `session_user`, not what the client writes); the
 * roles that record results may add and read them, so `status` and `reconcile` record as they
 * read.
 */
import { grantLike } from './guards.js';

export const CHECKS_KEPT = `CREATE TRIGGER checks_kept BEFORE UPDATE OR DELETE ON checks
  FOR EACH ROW EXECUTE FUNCTION payouts_owners_only();
CREATE TRIGGER checks_kept_truncate BEFORE TRUNCATE ON checks
  FOR EACH STATEMENT EXECUTE FUNCTION payouts_owners_only();
CREATE TRIGGER checks_by BEFORE INSERT ON checks
  FOR EACH ROW EXECUTE FUNCTION payouts_result_by();
${grantLike('results', 'checks')}`;
