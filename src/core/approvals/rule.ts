/** `payouts approvals require|off|show`: a service's approval rule on the shared history. */
import type { Output } from '../../output/output.js';
import { type RuleRow, ruleChanges, setRule } from '../../state/pg/approval-rules.js';
import { ruleText, thresholdLines, thisMachine, whoText, withShared } from './common.js';

/** The service a rule is about, and the shared history it lives in. */
export interface RuleTarget {
  url: string;
  serviceKey: string;
  service: string;
}

/** Turns the rule on (every run, or runs above the amounts) or off; records who and when. */
export async function changeRule(
  target: RuleTarget,
  rule: Pick<RuleRow, 'active' | 'above' | 'expires_days' | 'approvers'>,
  output: Output,
): Promise<number> {
  const changes = await withShared(target.url, async (h) => {
    await setRule(h, target, rule, thisMachine());
    return ruleChanges(h, target.serviceKey);
  });
  const now = changes[changes.length - 1]!;
  output.result({ service: target.service, rule: now }, () =>
    [
      `Approvals for ${target.service}: ${ruleText(now)} (set by ${whoText(now.set_by, now)} at ${now.at})`,
      ...thresholdLines(now),
    ].join('\n'),
  );
  return 0;
}

/** The rule in force for the service, and every change of it with who and when. */
export async function showRule(target: RuleTarget, output: Output): Promise<number> {
  const changes = await withShared(target.url, (h) => ruleChanges(h, target.serviceKey));
  const now = changes[changes.length - 1];
  output.result({ service: target.service, rule: now ?? null, changes }, () =>
    [
      `Approvals for ${target.service}: ${ruleText(now)}`,
      ...thresholdLines(now),
      'Changes:',
      ...changes.map((c) => `  ${c.at}  ${whoText(c.set_by, c)}: ${ruleText(c)}`),
    ].join('\n'),
  );
  return 0;
}
