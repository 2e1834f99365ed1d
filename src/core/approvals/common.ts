/** What the approval commands and the send's approval check share (docs/approvals.md). */
import { hash, randomBytes } from 'node:crypto';
import { hostname, userInfo } from 'node:os';
import type { PayoutRequest } from '../../api/types.js';
import { UsageError } from '../../errors.js';
import { payoutHash } from '../../state/hash.js';
import { type CurrencyTotals, parseAmount } from '../../money/amount.js';
import type { CurrencyTable } from '../../money/currencies.js';
import { shortTime } from '../../output/table.js';
import type { Above, Machine, PreparedRun, RuleRow } from '../../state/pg/approvals.js';
import type { PgHistory } from '../../state/pg/history.js';

/** The refusal of an approval command, or of --prepare or --approved, on a local history. */
export function needsSharedHistory(what: string): UsageError {
  return new UsageError(
    `${what} needs a shared history: approvals are kept in the team's PostgreSQL, where a second person and the database can check them. Set one with PAYOUTS_STATE_URL=postgres://USER@HOST/DB, \`payouts config set state_url postgres://…\` or --state-url (docs/shared-history.md, docs/approvals.md)`,
  );
}

/** This machine's OS user and host, recorded beside the database role. */
export function thisMachine(): Machine {
  let os_user = '?';
  try {
    os_user = userInfo().username;
  } catch {
    // No passwd entry (some containers): the database role still names who.
  }
  return { os_user, host: hostname() };
}

/** A payout's hash for approvals: its identity (payoutHash) and its description. */
export function approvalHash(p: PayoutRequest): string {
  return hash('sha256', JSON.stringify([payoutHash(p), p.description ?? null]), 'hex');
}

/**
 * The content hash of a run's payouts: SHA-256 of each payout's reference and approval hash,
 * in reference order, so the same payouts match however the file orders or formats them.
 */
export function contentHash(payouts: Array<{ reference_id: string; hash: string }>): string {
  const lines = payouts.map((p) => JSON.stringify([p.reference_id, p.hash])).sort();
  return hash('sha256', lines.join('\n'), 'hex');
}

/** A new prepared run's id: "p" and 15 hex digits, apart from run ids (16 hex digits). */
export function newPrepId(): string {
  return `p${randomBytes(8).toString('hex').slice(0, 15)}`;
}

/** Opens the shared history at `url` for `work`, and closes it. */
export async function withShared<T>(url: string, work: (h: PgHistory) => Promise<T>): Promise<T> {
  const { PgHistory } = await import('../../state/pg/history.js');
  const h = await PgHistory.open(url);
  try {
    return await work(h);
  } finally {
    await h.close();
  }
}

/** Parses `--above CUR=AMOUNT` against the currency table; a UsageError naming the value. */
export function parseAbove(text: string, currencies: CurrencyTable): Above {
  const m = /^([A-Za-z]{3})=(.+)$/.exec(text.trim());
  const code = m?.[1]?.toUpperCase();
  const digits = code === undefined ? undefined : currencies.minorUnits(code);
  const parsed = m && digits !== undefined ? parseAmount(m[2]!, digits) : undefined;
  if (!m || !parsed?.ok) {
    const why = !m
      ? 'use CUR=AMOUNT'
      : digits === undefined
        ? 'unknown currency'
        : parsed?.ok === false
          ? parsed.message
          : '';
    throw new UsageError(`--above ${JSON.stringify(text)}: ${why}, such as EUR=10000.00`);
  }
  return { currency: code!, amount: m[2]!.trim() };
}

/** Whether a rule asks approval of a run with these totals (undefined rule: none). */
export function ruleApplies(
  rule: RuleRow | undefined,
  totals: CurrencyTotals,
  currencies: CurrencyTable,
): boolean {
  if (!rule?.active) return false;
  if (!rule.above.length) return true;
  return rule.above.some((a) => {
    const parsed = parseAmount(a.amount, currencies.minorUnits(a.currency));
    return parsed.ok && totals.minorOf(a.currency) > parsed.amount.minor;
  });
}

/** A rule in words: "every run", "runs above EUR 10000.00 or USD 5000.00", "off". */
export function ruleText(rule: RuleRow | undefined): string {
  if (!rule?.active) return 'off: runs need no approval';
  const which = rule.above.length
    ? `runs whose total is above ${rule.above.map((a) => `${a.currency} ${a.amount}`).join(' or ')}`
    : 'every run';
  return `on: ${which} needs another person's approval; a prepared run may be approved for ${rule.expires_days} day${rule.expires_days === 1 ? '' : 's'}`;
}

/** Who did something, in words: "role ana (ana@laptop-2)". */
export function whoText(role: string, m: { os_user: string | null; host: string | null }): string {
  return `role ${role} (${m.os_user ?? '?'}@${m.host ?? '?'})`;
}

/** Where a prepared run stands: prepared, approved, rejected, sent or expired. */
export function prepState(
  p: PreparedRun,
): 'prepared' | 'approved' | 'rejected' | 'sent' | 'expired' {
  if (p.events.some((e) => e.decision === 'sent')) return 'sent';
  const decided = p.events.find((e) => e.decision !== 'sent');
  if (decided) return decided.decision as 'approved' | 'rejected';
  return p.expired ? 'expired' : 'prepared';
}

/** A prepared run's totals in a line: "EUR 12.50 (3 payouts), USD 4.00 (1 payout)". */
export function totalsLine(p: PreparedRun): string {
  return Object.entries(p.totals)
    .map(([cur, t]) => `${cur} ${t.total} (${t.count} payout${t.count === 1 ? '' : 's'})`)
    .join(', ');
}

/** What happened to a prepared run, a line per event, for `approve` and `runs show`. */
export function eventLines(p: PreparedRun): string[] {
  const lines = [
    `prepared by ${whoText(p.prepared_by, p)} at ${shortTime(p.created_at)} UTC${p.note ? `: ${JSON.stringify(p.note)}` : ''}`,
  ];
  for (const e of p.events) {
    const why = e.reason ? `: ${JSON.stringify(e.reason)}` : '';
    const run = e.run_id ? ` as run ${e.run_id}` : '';
    lines.push(`${e.decision} by ${whoText(e.by_role, e)} at ${shortTime(e.at)} UTC${run}${why}`);
  }
  return lines;
}
