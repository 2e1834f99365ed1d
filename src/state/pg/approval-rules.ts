/**
 * A service's approval rule in a shared history, apart from the runs it judges: its changes,
 * written by the tables' owner only and read by everyone (docs/approvals.md).
 */
import type pg from 'pg';
import { serviceIdentity } from '../../api/base-url.js';
import { UsageError } from '../../errors.js';
import { serviceId } from '../hash.js';
import type { Machine } from './approvals.js';
import type { PgHistory } from './history.js';

/**
 * A threshold of a rule: runs whose total in `currency` is above `amount` need approval;
 * `amount` "none": runs in that currency never do.
 */
export interface Above {
  currency: string;
  amount: string;
}

/** A change of a service's approval rule; the latest is in force. */
export interface RuleRow {
  active: boolean;
  /** Empty: every run needs approval; else a currency not named needs it too. */
  above: Above[];
  expires_days: number;
  /** Distinct roles, none the preparer, that approve a run. */
  approvers: number;
  set_by: string;
  os_user: string | null;
  host: string | null;
  at: string;
}

interface RuleDbRow {
  service: string;
  active: number;
  above: string | null;
  expires_days: number;
  approvers: number;
  set_by: string;
  os_user: string | null;
  host: string | null;
  at: string;
}

function ruleOf(r: RuleDbRow): RuleRow {
  return {
    active: r.active === 1,
    above: r.above ? (JSON.parse(r.above) as Above[]) : [],
    expires_days: r.expires_days,
    approvers: r.approvers,
    set_by: r.set_by,
    os_user: r.os_user,
    host: r.host,
    at: r.at,
  };
}

/**
 * Every change of a service's rule, the latest last: the rules of its URL however spelled
 * (serviceIdentity), rules recorded before the spelling was one included.
 */
export function ruleChanges(h: PgHistory, serviceKey: string): Promise<RuleRow[]> {
  const key = serviceIdentity(serviceKey);
  return h.read('reading the approval rule', async (c) => {
    const r = await c.query<RuleDbRow>(
      `SELECT service, active, above, expires_days, approvers, set_by, os_user, host, at
       FROM approval_rules ORDER BY id`,
    );
    return r.rows.filter((x) => serviceIdentity(x.service) === key).map(ruleOf);
  });
}

/**
 * Refuses in plain words, before the database does with "permission denied", a role that may
 * not change the rule: only the history's owner (or a superuser) is granted it.
 */
async function onlyOwner(c: pg.Client): Promise<void> {
  const r = await c.query<{ may: boolean; role: string }>(
    `SELECT has_table_privilege('approval_rules', 'INSERT') AS may, session_user AS role`,
  );
  const row = r.rows[0];
  if (row && !row.may) {
    throw new UsageError(
      `only the owner of the history changes the rule: role ${row.role} may read it (payouts approvals show), not change it. Ask the administrator, who connects as the database's owner, to run this command; nothing was changed`,
    );
  }
}

/** Records a change of a service's rule (the database names who and when). */
export function setRule(
  h: PgHistory,
  target: { serviceKey: string; service: string },
  rule: Pick<RuleRow, 'active' | 'above' | 'expires_days' | 'approvers'>,
  who: Machine,
): Promise<void> {
  const service = serviceIdentity(target.service);
  return h.write('recording the approval rule', async (c) => {
    await onlyOwner(c);
    await c.query(
      `INSERT INTO approval_rules (service_id, service, active, above, expires_days, approvers,
         set_by, os_user, host, at) VALUES ($1, $2, $3, $4, $5, $6, '', $7, $8, '')`,
      [
        serviceId(service),
        service,
        rule.active ? 1 : 0,
        JSON.stringify(rule.above),
        rule.expires_days,
        rule.approvers,
        who.os_user,
        who.host,
      ],
    );
  });
}
