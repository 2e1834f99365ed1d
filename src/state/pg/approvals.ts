/**
 * The approval tables of a shared history (docs/approvals.md): the rule of each service,
 * prepared runs with their payouts, and what happened to each (approved, rejected, sent).
 * PostgreSQL's triggers (schema.ts) record who wrote each row and keep the rules; the checks
 * here only explain a refusal before the database makes it.
 */
import type pg from 'pg';
import { serviceIdentity } from '../../api/base-url.js';
import { UsageError } from '../../errors.js';
import { approvalHash, contentHash } from '../approval-hash.js';
import { canonicalDecimal, serviceId } from '../hash.js';
import type { PgHistory } from './history.js';
import type { PayoutRow } from '../run-state.js';
import { wordsOf } from '../runs.js';

/** The OS user and host a row names beside the database role. */
export interface Machine {
  os_user: string;
  host: string;
}

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

/** One thing that happened to a prepared run. */
export interface ApprovalEvent {
  decision: 'approved' | 'rejected' | 'sent';
  reason: string | null;
  by_role: string;
  os_user: string | null;
  host: string | null;
  /** The run that sent it (`sent` only). */
  run_id: string | null;
  at: string;
}

/** A prepared run and its events, oldest first. */
export interface PreparedRun {
  id: number;
  prep_id: string;
  service: string;
  inputs: string[];
  content_hash: string;
  payout_count: number;
  totals: Record<string, { count: number; total: string }>;
  batch_reference: string | null;
  webhook_url: string | null;
  note: string | null;
  /**
   * The options of `payouts send` its files were read and are to be sent with (--encoding,
   * --decimal-comma, --map …, --profile …), as the preparer gave them: a next step repeats them.
   */
  send_args: string[];
  prepared_by: string;
  os_user: string | null;
  host: string | null;
  created_at: string;
  expires_at: string;
  /** By the server's clock. */
  expired: boolean;
  /** Approvals the rule in force asks (distinct roles, none the preparer). */
  approvers_needed: number;
  events: ApprovalEvent[];
  /**
   * Its retry rows, each with the reference it retries (computed from its payouts by
   * withFigures, only when it has some): what an approver's screen may name.
   */
  retries?: Array<{ reference_id: string; retry_of: string }>;
}

/** A payout of a prepared run: its columns, and the hash the approval covers. */
export interface PreparedPayout extends PayoutRow {
  hash: string;
  /** The reference it retries (a retry file's row), null for a payout of its own. */
  retry_of: string | null;
}

/** What a person prepares. */
export interface NewPrepared {
  prep_id: string;
  serviceKey: string;
  service: string;
  inputs: string[];
  content_hash: string;
  totals: PreparedRun['totals'];
  batch_reference?: string;
  webhook_url?: string;
  note?: string;
  /** The options its files were read and are to be sent with, as given (see PreparedRun). */
  send_args?: string[];
}

/** The session's database role: who the history records as having written. */
export function sessionRole(h: PgHistory): Promise<string> {
  return h.read('reading the session role', async (c) => {
    const r = await c.query<{ role: string }>('SELECT session_user AS role');
    return r.rows[0]!.role;
  });
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

/** Records a prepared run and its payouts in one transaction; the run as recorded. */
export async function insertPrepared(
  h: PgHistory,
  prep: NewPrepared,
  payouts: PreparedPayout[],
  who: Machine,
): Promise<PreparedRun> {
  const id = await h.write('recording the prepared run', async (c) => {
    const r = await c.query<{ id: number }>(
      `INSERT INTO prepared_runs (prep_id, service_id, service, inputs, content_hash, payout_count,
         totals, batch_reference, webhook_url, note, prepared_by, os_user, host, created_at,
         expires_at, send_args)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, '', $11, $12, '', '', $13) RETURNING id`,
      [
        prep.prep_id,
        serviceId(prep.serviceKey),
        serviceIdentity(prep.service),
        JSON.stringify(prep.inputs),
        prep.content_hash,
        payouts.length,
        JSON.stringify(prep.totals),
        prep.batch_reference ?? null,
        prep.webhook_url ?? null,
        prep.note ?? null,
        who.os_user,
        who.host,
        JSON.stringify(prep.send_args ?? []),
      ],
    );
    const id = r.rows[0]!.id;
    for (let i = 0; i < payouts.length; i += 1000) {
      const page = payouts.slice(i, i + 1000);
      const col = <K extends keyof PreparedPayout>(k: K) => page.map((p) => p[k]);
      await c.query(
        `INSERT INTO prepared_payouts (prep, row, reference_id, amount, currency, recipient,
           description, hash, retry_of)
         SELECT $1, * FROM unnest($2::int[], $3::text[], $4::text[], $5::text[], $6::text[],
           $7::text[], $8::text[], $9::text[])`,
        [
          id,
          col('row'),
          col('reference_id'),
          col('amount'),
          col('currency'),
          col('recipient'),
          col('description'),
          col('hash'),
          col('retry_of'),
        ],
      );
    }
    return id;
  });
  return (await preparedWhere(h, 'p.id = $1', [id]))[0]!;
}

interface PreparedDbRow extends Omit<PreparedRun, 'inputs' | 'totals' | 'events' | 'send_args'> {
  inputs: string;
  /** JSON text; null in a run prepared before the column was. */
  send_args: string | null;
  totals: string;
  events: ApprovalEvent[] | null;
}

/** Prepared runs matching a condition on `p`, the newest first. */
function preparedWhere(h: PgHistory, where: string, params: unknown[]): Promise<PreparedRun[]> {
  return h.read('reading prepared runs', async (c) => {
    const r = await c.query<PreparedDbRow>(
      `SELECT p.id, p.prep_id, p.service, p.inputs, p.content_hash, p.payout_count, p.totals,
         p.batch_reference, p.webhook_url, p.note, p.send_args, p.prepared_by, p.os_user, p.host,
         p.created_at, p.expires_at,
         p.expires_at < to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS expired,
         greatest(coalesce((SELECT r.approvers FROM approval_rules r WHERE r.service_id = p.service_id
           ORDER BY r.id DESC LIMIT 1), 1), 1) AS approvers_needed,
         (SELECT json_agg(json_build_object('decision', a.decision, 'reason', a.reason,
            'by_role', a.by_role, 'os_user', a.os_user, 'host', a.host, 'run_id', a.run_id,
            'at', a.at) ORDER BY a.id) FROM approvals a WHERE a.prep = p.id) AS events
       FROM prepared_runs p WHERE ${where} ORDER BY p.id DESC`,
      params,
    );
    return r.rows.map((p) => ({
      ...p,
      inputs: JSON.parse(p.inputs) as string[],
      send_args: wordsOf(p.send_args),
      totals: JSON.parse(p.totals) as PreparedRun['totals'],
      events: p.events ?? [],
    }));
  });
}

/** The prepared run whose id starts with `prefix`; a UsageError when several do. */
export async function findPrepared(h: PgHistory, prefix: string): Promise<PreparedRun | undefined> {
  if (!/^p[0-9a-f]{0,15}$/.test(prefix)) {
    throw new UsageError(
      `${JSON.stringify(prefix)} is not a prepared run id: those are p and 15 hex digits (a unique start of one will do), as send --prepare printed and payouts runs lists`,
    );
  }
  const found = await preparedWhere(h, "p.prep_id LIKE $1 || '%'", [prefix]);
  if (found.length > 1) {
    throw new UsageError(
      `${JSON.stringify(prefix)} starts ${found.length} prepared run ids (${found.map((p) => p.prep_id).join(', ')}): give more of it`,
    );
  }
  return found[0];
}

/** Every prepared run, the newest first. */
export function listPrepared(h: PgHistory): Promise<PreparedRun[]> {
  return preparedWhere(h, 'true', []);
}

/** The prepared runs of a service holding exactly the payouts of `contentHash`, newest first. */
export function preparedByContent(
  h: PgHistory,
  serviceKey: string,
  content: string,
): Promise<PreparedRun[]> {
  return preparedWhere(h, 'p.service_id = $1 AND p.content_hash = $2', [
    serviceId(serviceKey),
    content,
  ]);
}

/**
 * The approved runs of a service that share references with `refs`, the one sharing most
 * first: what a file that differs was probably meant to be.
 */
export function approvedSharing(
  h: PgHistory,
  serviceKey: string,
  refs: string[],
): Promise<PreparedRun[]> {
  return preparedWhere(
    h,
    // Only approved runs compete, the newest on a tie: a rejected run sharing as many
    // references is not what the file was meant to be.
    `p.id IN (SELECT x.prep FROM prepared_payouts x JOIN prepared_runs q ON q.id = x.prep
       WHERE q.service_id = $1 AND x.reference_id = ANY($2::text[])
         AND EXISTS (SELECT 1 FROM approvals a WHERE a.prep = x.prep AND a.decision = 'approved')
       GROUP BY x.prep ORDER BY count(*) DESC, x.prep DESC LIMIT 1)`,
    [serviceId(serviceKey), refs],
  );
}

/** Whether the history holds a run of this id (a run an approval's `sent` event names). */
export function runRecorded(h: PgHistory, runId: string): Promise<boolean> {
  return h.read('reading the runs', async (c) => {
    const r = await c.query('SELECT 1 FROM runs WHERE run_id = $1', [runId]);
    return r.rows.length > 0;
  });
}

/** The payouts of a prepared run, in row order. */
export function preparedPayouts(h: PgHistory, id: number): Promise<PreparedPayout[]> {
  return h.read('reading a prepared run', async (c: pg.Client) => {
    const r = await c.query<PreparedPayout>(
      `SELECT row, reference_id, amount, currency, recipient, description, hash, retry_of
       FROM prepared_payouts WHERE prep = $1 ORDER BY row`,
      [id],
    );
    return r.rows;
  });
}

/** A prepared run's figures as its payouts make them, whatever its own row says. */
export interface PreparedFigures {
  /** Its payouts, in row order, each hash made again from the row's columns. */
  payouts: PreparedPayout[];
  payout_count: number;
  /** Per currency: count and exact decimal total. */
  totals: PreparedRun['totals'];
  /** Of the payouts, the service, the batch reference and the webhook URL (contentHash). */
  content_hash: string;
  service: string;
  batch_reference: string | null;
  webhook_url: string | null;
  /** Where the prepared run's row says otherwise, what it says: empty when it is true. */
  claims: string[];
}

/**
 * The figures of a prepared run computed from its payouts (`prepared_payouts`): what an
 * approver is shown and a send compared with, never the preparer's own count, totals or hash.
 */
export function preparedFigures(h: PgHistory, p: PreparedRun): Promise<PreparedFigures> {
  return h.read('reading a prepared run', async (c: pg.Client) => {
    const rows = await c.query<PreparedPayout>(
      `SELECT row, reference_id, amount, currency, recipient, description, hash, retry_of
       FROM prepared_payouts WHERE prep = $1 ORDER BY row`,
      [p.id],
    );
    // Exact decimal sums; a text that is not a plain decimal is counted apart, never summed.
    const sums = await c.query<{ currency: string; count: number; total: string | null }>(
      `SELECT currency, count(*)::int AS count,
         CASE WHEN bool_and(amount ~ '^[0-9]+(\\.[0-9]+)?$')
           THEN sum(CASE WHEN amount ~ '^[0-9]+(\\.[0-9]+)?$' THEN amount::numeric END)::text END AS total
       FROM prepared_payouts WHERE prep = $1 GROUP BY currency ORDER BY currency`,
      [p.id],
    );
    const payouts = rows.rows.map((x) => ({ ...x, hash: approvalHash(x) }));
    const totals: PreparedRun['totals'] = {};
    for (const t of sums.rows)
      totals[t.currency] = { count: t.count, total: t.total ?? 'not a decimal' };
    const bound = {
      service: serviceIdentity(p.service),
      batch_reference: p.batch_reference,
      webhook_url: p.webhook_url,
    };
    const f = {
      payouts,
      payout_count: payouts.length,
      totals,
      content_hash: contentHash(payouts, bound),
      ...bound,
    };
    const claims = claimsOf(p, f);
    if (rows.rows.some((x, i) => x.hash !== payouts[i]!.hash))
      claims.push('payout hashes its rows do not make');
    return { ...f, claims };
  });
}

/** What a prepared run's row claims that its payouts do not make. */
function claimsOf(p: PreparedRun, f: Omit<PreparedFigures, 'claims'>): string[] {
  const out: string[] = [];
  if (p.payout_count !== f.payout_count)
    out.push(`${p.payout_count} payouts (it holds ${f.payout_count})`);
  if (JSON.stringify(sorted(p.totals)) !== JSON.stringify(sorted(f.totals)))
    out.push(`totals ${JSON.stringify(p.totals)} (its payouts make ${JSON.stringify(f.totals)})`);
  if (p.content_hash !== f.content_hash) out.push('a content hash its payouts do not make');
  // The database keys the rule (approvers, expiry) by this text: another spelling misses it.
  if (p.service !== f.service)
    out.push(`the service ${JSON.stringify(p.service)}, not as payouts records ${f.service}`);
  return out;
}

/** Totals with their currencies in order, each total as a number's text, for comparing. */
function sorted(t: PreparedRun['totals']): Array<[string, number, string]> {
  return Object.entries(t ?? {})
    .map(([cur, v]): [string, number, string] => [cur, v.count, canonicalDecimal(v.total)])
    .sort((a, b) => a[0].localeCompare(b[0]));
}

/**
 * The prepared run as its payouts make it: its count, totals and content hash computed, and
 * its retries named (a retry's original is part of what moves).
 */
export function withFigures(p: PreparedRun, f: PreparedFigures): PreparedRun {
  const retries = f.payouts.flatMap(({ reference_id, retry_of }) =>
    retry_of === null ? [] : [{ reference_id, retry_of }],
  );
  return {
    ...p,
    payout_count: f.payout_count,
    totals: f.totals,
    content_hash: f.content_hash,
    ...(retries.length ? { retries } : {}),
  };
}

/**
 * Records an event of a prepared run, a decision with the screen it was made on (`review`, in
 * its own row: one transaction). The database refuses what the rules do not allow (its own
 * preparer, a second decision, an expired run, sending an unapproved one): a UsageError.
 */
export function recordEvent(
  h: PgHistory,
  prep: PreparedRun,
  event: { decision: ApprovalEvent['decision']; reason?: string; run_id?: string; review?: string },
  who: Machine,
): Promise<void> {
  return h.write('recording the decision', async (c) => {
    try {
      await c.query(
        `INSERT INTO approvals (prep, decision, reason, by_role, os_user, host, run_id, at, review)
         VALUES ($1, $2, $3, '', $4, $5, $6, '', $7)`,
        [
          prep.id,
          event.decision,
          event.reason ?? null,
          who.os_user,
          who.host,
          event.run_id ?? null,
          event.review ?? null,
        ],
      );
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      if (message.startsWith('payouts: ')) {
        throw new UsageError(
          `the shared history refused: ${message.slice(9)}; nothing was recorded`,
        );
      }
      throw err;
    }
  });
}
