/**
 * The approval tables of a shared history (docs/approvals.md): prepared runs with their
 * payouts, and what happened to each (approved, rejected, sent); the rule of each service is
 * in approval-rules.ts, a run's figures as its payouts make them in prepared-figures.ts.
 * PostgreSQL's triggers (schema.ts) record who wrote each row and keep the rules; the checks
 * here only explain a refusal before the database makes it.
 */
import type pg from 'pg';
import { serviceIdentity } from '../../api/base-url.js';
import { UsageError } from '../../errors.js';
import { serviceId } from '../hash.js';
import type { PgHistory } from './history.js';
import type { PayoutRow } from '../run-state.js';
import { wordsOf } from '../runs.js';

/** The OS user and host a row names beside the database role. */
export interface Machine {
  os_user: string;
  host: string;
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
