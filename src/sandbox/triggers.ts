/**
 * Status triggers: the recipient decides what the sandbox answers, and what the payout reads
 * later. Built-in triggers (`+failed`, `+late-failed`, `+returned`, …) always apply; rules of
 * the user's own (`payouts sandbox --trigger`, PAYOUTS_SANDBOX_TRIGGERS) come before them.
 */
import { UsageError } from '../errors.js';
import type { PayoutStatus } from './payout-rules.js';

/**
 * A status trigger: recipients containing `match` (in any letter case), or with `ref=REF` the
 * payout whose reference_id is REF, are answered `status` at create, and read `later` from
 * `afterMs` after their creation on.
 */
export interface TriggerRule {
  match: string;
  status: PayoutStatus;
  /** What a pending payout settles as, or a success turns into (a return); none: final. */
  later?: PayoutStatus;
  /** How long after its creation the payout reads `later`; none: the sandbox's pending delay. */
  afterMs?: number;
}

/**
 * The built-in triggers, checked in this order after the user's own (docs/sandbox.md):
 * answered failed or canceled at once; pending that fails or is canceled later (a late
 * failure); a success returned later (failed or canceled); pending that succeeds later.
 */
export const BUILT_IN_TRIGGERS: readonly TriggerRule[] = [
  { match: '+failed', status: 'failed' },
  { match: '+canceled', status: 'canceled' },
  { match: '+late-failed', status: 'pending', later: 'failed' },
  { match: '+late-canceled', status: 'pending', later: 'canceled' },
  { match: '+returned', status: 'success', later: 'failed' },
  { match: '+recalled', status: 'success', later: 'canceled' },
  { match: '+pending', status: 'pending', later: 'success' },
];

/**
 * How a MATCH names one payout by its reference_id, exactly: a rehearsal of a real file picks
 * the payouts that fail late without editing recipients, and their retries (new references,
 * same recipients) are paid.
 */
export const REFERENCE_MATCH = 'ref=';

/**
 * The first rule that matches: its reference_id (`ref=REF`), or its recipient, which contains
 * the rule's text in any letter case; none: success.
 */
export function triggerFor(
  recipient: string,
  rules: readonly TriggerRule[] = BUILT_IN_TRIGGERS,
  referenceId?: string,
): TriggerRule | undefined {
  const r = recipient.toLowerCase();
  return rules.find((rule) =>
    rule.match.startsWith(REFERENCE_MATCH)
      ? rule.match.slice(REFERENCE_MATCH.length) === referenceId
      : r.includes(rule.match.toLowerCase()),
  );
}

/** The status a recipient is answered with at create, by the built-in triggers. */
export function triggeredStatus(recipient: string): PayoutStatus {
  return triggerFor(recipient)?.status ?? 'success';
}

/**
 * The message of a payout a trigger answered other than success: "Sandbox trigger: recipient
 * asked for pending", with ", then failed" when it will not succeed. A success has none, even
 * one to be returned: a service does not announce a return.
 */
export function triggerMessage(rule: TriggerRule | undefined): string | undefined {
  if (!rule || rule.status === 'success') return undefined;
  const after = rule.later !== undefined && rule.later !== 'success' ? `, then ${rule.later}` : '';
  return `Sandbox trigger: recipient asked for ${rule.status}${after}`;
}

const STATUSES: readonly PayoutStatus[] = ['success', 'pending', 'failed', 'canceled'];

const FORM =
  'the form is MATCH:STATUS[:LATER][:MS], such as +bounce:success:failed:5000, ref=JAN-0003:pending:failed or @slow.example:pending:success:120000';

/** The error of a bad rule, naming where it came from, the rule, the reason and the form. */
function badRule(source: string, text: string, why: string): UsageError {
  return new UsageError(`${source} ${JSON.stringify(text)}: ${why}; ${FORM}`);
}

/** A status word of the rule, or undefined when the word is none. */
function statusWord(word: string | undefined): PayoutStatus | undefined {
  const w = word?.toLowerCase();
  return STATUSES.find((s) => s === w);
}

/** Checks that the change a rule describes is one a payout can make. */
function checkChange(source: string, text: string, rule: TriggerRule): void {
  const { status, later } = rule;
  if (later === undefined) return;
  if (status === 'failed' || status === 'canceled') {
    throw badRule(
      source,
      text,
      `a ${status} payout is final: LATER follows pending or success only`,
    );
  }
  if (later === 'pending' || later === status) {
    throw badRule(
      source,
      text,
      `a ${status} payout can turn ${status === 'pending' ? 'success, ' : ''}failed or canceled, not ${later}`,
    );
  }
}

/**
 * Parses a trigger rule, `MATCH:STATUS[:LATER][:MS]`: recipients containing MATCH are answered
 * STATUS, and read LATER MS milliseconds after their creation (default: the pending delay). A
 * pending rule without LATER settles as success. `source` names the flag or variable in errors.
 */
export function parseTriggerRule(text: string, source = '--trigger'): TriggerRule {
  const parts = text.trim().split(':');
  const [match = '', statusText, ...rest] = parts;
  if (match.trim() === '' || match.includes(',') || match === REFERENCE_MATCH) {
    throw badRule(
      source,
      text,
      'MATCH must be a non-empty text without ":" or ",", or ref= and a reference_id',
    );
  }
  const status = statusWord(statusText);
  if (status === undefined) {
    throw badRule(
      source,
      text,
      `STATUS ${JSON.stringify(statusText ?? '')} must be one of ${STATUSES.join(', ')}`,
    );
  }
  let later = statusWord(rest[0]);
  if (later !== undefined) rest.shift();
  const msText = rest.shift();
  if (rest.length > 0 || (msText !== undefined && !/^\d+$/.test(msText))) {
    throw badRule(
      source,
      text,
      `${JSON.stringify(msText ?? '')} is neither a status nor a delay in milliseconds`,
    );
  }
  if (status === 'pending') later ??= 'success';
  const rule: TriggerRule = { match, status, ...(later === undefined ? {} : { later }) };
  checkChange(source, text, rule);
  if (msText !== undefined) {
    const afterMs = Number(msText);
    if (later === undefined || !Number.isSafeInteger(afterMs)) {
      throw badRule(
        source,
        text,
        `a delay applies to a payout that changes later (pending, or success with LATER)`,
      );
    }
    rule.afterMs = afterMs;
  }
  return rule;
}

/** Parses a comma-separated list of rules (PAYOUTS_SANDBOX_TRIGGERS); blank: none. */
export function parseTriggerList(text: string | undefined, source: string): TriggerRule[] {
  if (text === undefined || text.trim() === '') return [];
  return text
    .split(',')
    .filter((part) => part.trim() !== '')
    .map((part) => parseTriggerRule(part, source));
}

/** A rule as `payouts sandbox --json` prints it: every key present. */
export function triggerJson(rule: TriggerRule, pendingDelayMs: number) {
  return {
    match: rule.match,
    status: rule.status,
    later: rule.later ?? null,
    after_ms: rule.later === undefined ? null : (rule.afterMs ?? pendingDelayMs),
  };
}

/** A delay for people: "500 ms", "30 s", "1.5 s", "2 min". */
export function delayText(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  return `${ms / 1000} s`;
}

/** A rule for people: "+bounce: success, then failed after 5 s". */
export function triggerText(rule: TriggerRule, pendingDelayMs: number): string {
  const later =
    rule.later === undefined
      ? ''
      : `, then ${rule.later} after ${delayText(rule.afterMs ?? pendingDelayMs)}`;
  return `${rule.match}: ${rule.status}${later}`;
}
