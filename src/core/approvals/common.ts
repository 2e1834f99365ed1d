/** What the approval commands and the send's approval check share (docs/approvals.md). */
import { randomBytes } from 'node:crypto';
import { hostname, userInfo } from 'node:os';
import { UsageError } from '../../errors.js';
import { type CurrencyTotals, formatMinor, moneyText, parseAmount } from '../../money/amount.js';
import { type CurrencyTable, isoMinorUnits } from '../../money/currencies.js';
import { shortTime } from '../../output/table.js';
import type { Above, RuleRow } from '../../state/pg/approval-rules.js';
import type { Machine, PreparedRun } from '../../state/pg/approvals.js';
import type { PgHistory } from '../../state/pg/history.js';
import { count } from '../../output/display.js';

/** The refusal of an approval command, or of --prepare or --approved, on a local history. */
export function needsSharedHistory(what: string): UsageError {
  return new UsageError(
    `${what} needs a shared history: approvals are kept in the team's PostgreSQL, where a second person and the database can check them. Set one with PAYOUTS_STATE_URL=postgres://USER@HOST/DB?sslmode=verify-full, \`payouts config set state_url postgres://…\` or --state-url (docs/shared-history.md, docs/approvals.md)`,
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

// The hashes an approval binds live beside the tables, which compute a prepared run's figures.
export { approvalHash, type Bound, contentHash } from '../../state/approval-hash.js';

/** A new prepared run's id: "p" and 15 hex digits, apart from run ids (16 hex digits). */
export function newPrepId(): string {
  return `p${randomBytes(8).toString('hex').slice(0, 15)}`;
}

/**
 * A shared history: its URL, or a session already open there (a send's own, which its
 * approval checks share rather than log in again: on a distant server every login costs
 * round trips for TCP, TLS and the password's exchange).
 */
export type SharedAt = string | PgHistory;

/** Runs `work` on the shared history `at`: on its open session, else on one opened and closed. */
export async function withShared<T>(at: SharedAt, work: (h: PgHistory) => Promise<T>): Promise<T> {
  if (typeof at !== 'string') return work(at);
  const { PgHistory } = await import('../../state/pg/history.js');
  const h = await PgHistory.open(at);
  try {
    return await work(h);
  } finally {
    await h.close();
  }
}

/**
 * Parses `--above CUR=AMOUNT` (or `CUR=none`: runs in CUR never need approval) against the
 * currency table; a UsageError naming the value.
 */
export function parseAbove(text: string, currencies: CurrencyTable): Above {
  const m = /^([A-Za-z]{3})=(.+)$/.exec(text.trim());
  const code = m?.[1]?.toUpperCase();
  const digits = code === undefined ? undefined : currencies.minorUnits(code);
  if (m && digits !== undefined && m[2]!.trim().toLowerCase() === 'none') {
    return { currency: code!, amount: 'none' };
  }
  const parsed = m && digits !== undefined ? parseAmount(m[2]!, digits) : undefined;
  if (!m || !parsed?.ok) {
    const why = !m
      ? 'use CUR=AMOUNT'
      : digits === undefined
        ? 'unknown currency'
        : parsed?.ok === false
          ? parsed.message
          : '';
    throw new UsageError(
      `--above ${JSON.stringify(text)}: ${why}, such as EUR=10000.00 (or EUR=none: EUR runs never need approval)`,
    );
  }
  return { currency: code!, amount: m[2]!.trim() };
}

/**
 * Whether a rule asks approval of a run with these totals (undefined rule: none). With
 * thresholds, a currency the rule does not name needs approval, one it names "none" never,
 * and one it names with an amount when the run's total in it is above the amount.
 */
export function ruleApplies(
  rule: RuleRow | undefined,
  totals: CurrencyTotals,
  currencies: CurrencyTable,
): boolean {
  if (!rule?.active) return false;
  if (!rule.above.length) return true;
  return [...totals.entries()].some((t) => {
    const a = rule.above.find((x) => x.currency === t.currency);
    if (a === undefined) return true;
    if (a.amount === 'none') return false;
    const parsed = parseAmount(a.amount, currencies.minorUnits(a.currency));
    return !parsed.ok || t.minor > parsed.amount.minor;
  });
}

/** Who approves under a rule, in words: "another person's", "2 other people's". */
function approversText(rule: RuleRow): string {
  return rule.approvers > 1 ? `${rule.approvers} other people's` : "another person's";
}

/** A threshold as every amount is shown: EUR=1000 reads "EUR 1,000.00". */
export function thresholdMoney(a: Above): string {
  const digits = isoMinorUnits(a.currency);
  const parsed = digits === undefined ? undefined : parseAmount(a.amount, digits);
  const text = parsed?.ok ? formatMinor(parsed.amount.minor, digits!) : a.amount;
  return moneyText(a.currency, text);
}

/** A rule in words: "every run", "runs above EUR 10000.00 or USD 5000.00 (…)", "off". */
export function ruleText(rule: RuleRow | undefined): string {
  if (!rule?.active) return 'off: runs need no approval';
  const named = rule.above.filter((a) => a.amount !== 'none');
  const never = rule.above.filter((a) => a.amount === 'none').map((a) => a.currency);
  const who = `needs ${approversText(rule)} approval`;
  const days = `a prepared run may be approved for ${count(rule.expires_days, 'day')}`;
  if (!rule.above.length) return `on: every run ${who}; ${days}`;
  const neverText = never.length ? ` (${never.join(', ')}: never)` : '';
  if (!named.length) return `on: a run in any currency but ${never.join(', ')} ${who}; ${days}`;
  const above = named.map(thresholdMoney).join(' or ');
  return `on: a run whose total is above ${above} ${who}, as does a run in any currency not named${neverText}; ${days}`;
}

/** The rule's thresholds a line each, with the approvals each asks: for `approvals show`. */
export function thresholdLines(rule: RuleRow | undefined): string[] {
  if (!rule?.active) return [];
  const n = count(rule.approvers, 'approver');
  return [
    ...rule.above.map((a) =>
      a.amount === 'none'
        ? `  ${a.currency}: never needs approval`
        : `  above ${thresholdMoney(a)}: ${n}`,
    ),
    `  ${rule.above.length ? 'any other currency' : 'every run'}: ${n}`,
  ];
}

/** Who did something, in words: "role ana (ana@laptop-2)". */
export function whoText(role: string, m: { os_user: string | null; host: string | null }): string {
  return `role ${role} (${m.os_user ?? '?'}@${m.host ?? '?'})`;
}

/** The distinct roles, none the preparer, that approved a prepared run. */
export function approversOf(p: PreparedRun): string[] {
  const roles = p.events
    .filter((e) => e.decision === 'approved' && e.by_role !== p.prepared_by)
    .map((e) => e.by_role);
  return [...new Set(roles)];
}

/**
 * Where a prepared run stands: rejected by anyone; approved once as many roles as the rule
 * asks (none the preparer) approved it, and sent once a run sent it so approved; expired
 * when its time passed before it was sent; else prepared. A `sent` event alone approves
 * nothing.
 */
export function prepState(
  p: PreparedRun,
): 'prepared' | 'approved' | 'rejected' | 'sent' | 'expired' {
  if (p.events.some((e) => e.decision === 'rejected')) return 'rejected';
  const approved = approversOf(p).length >= Math.max(p.approvers_needed ?? 1, 1);
  const sent = p.events.some((e) => e.decision === 'sent');
  if (approved && sent) return 'sent';
  if (p.expired) return 'expired';
  return approved ? 'approved' : 'prepared';
}

/** A prepared run's totals in a line: "EUR 12.50 (3 payouts), USD 4.00 (1 payout)". */
export function totalsLine(p: PreparedRun): string {
  return Object.entries(p.totals)
    .map(([cur, t]) => `${moneyText(cur, t.total)} (${count(t.count, 'payout')})`)
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
