/**
 * A decision kept as it was reviewed (docs/approvals.md#a-decision-kept-as-reviewed): `approve`
 * records, in the decision's own row of `approvals`, the screen the approver decided on; `runs
 * show PREP` shows it ("as reviewed") apart from what the history says now.
 */
import { displayText } from '../../output/display.js';
import type { Output } from '../../output/output.js';
import type { PgHistory } from '../../state/pg/history.js';
import { reviewsIn } from '../../state/pg/prepared-views.js';
import { whoText } from './common.js';
import type { PreparedScreen } from './screen.js';
import { attentionOf, bodyOf, type ReviewDoc, type ScreenBody } from './screen-doc.js';
import { bodyLines, headLines, screenTable, whenText } from './screen-view.js';

/** What a decision keeps: the screen's lines as shown, and its body as the document has it. */
export type KeptScreen = ScreenBody & { lines: string[] };

/** The screen `s` as a decision keeps it (JSON), its lines as shown (`all`: every change). */
export function keptScreen(s: PreparedScreen, all: boolean): string {
  const kept: KeptScreen = { lines: bodyLines(s, all), ...bodyOf(s) };
  return JSON.stringify(kept);
}

/** A kept screen read back; null when none was kept or it is not one (a decision of an older version). */
function parsed(text: string | null): KeptScreen | null {
  if (text === null) return null;
  try {
    const v = JSON.parse(text) as KeptScreen;
    return Array.isArray(v?.lines) && Array.isArray(v.attention) ? v : null;
  } catch {
    return null;
  }
}

/** The decisions on a prepared run (its id), the first first, each with the screen it was made on. */
export async function reviewsOf(h: PgHistory, prep: number): Promise<ReviewDoc[]> {
  return (await reviewsIn(h, prep)).map((r) => ({
    decision: r.decision,
    by: { role: r.by_role, os_user: r.os_user, host: r.host },
    at: r.at,
    reason: r.reason,
    screen: parsed(r.review),
  }));
}

/** "As reviewed by role bob (bob@host) at …, who rejected it: "why"". */
function reviewHead(r: ReviewDoc): string {
  const why = r.reason ? `: ${JSON.stringify(r.reason)}` : '';
  const verb = r.decision === 'approved' ? 'approved' : 'rejected';
  return `As reviewed by ${whoText(r.by.role, r.by)} at ${whenText(r.at)}, who ${verb} it${why}:`;
}

/**
 * `runs show` of a decided prepared run: its head, each decision's screen as it was reviewed,
 * then what differs now, and the table with both (never a payout "sent earlier" that its
 * reference_id's holder sent as another payout).
 */
export async function showReviewed(
  s: PreparedScreen,
  reviews: ReviewDoc[],
  output: Output,
  opts: { all: boolean },
): Promise<void> {
  const say = (line: string) => output.printAside(displayText(line));
  for (const line of headLines(s)) say(line);
  const kept = new Set<string>();
  for (const r of reviews) {
    say(reviewHead(r));
    if (!r.screen) say('  (no screen kept: decided with a version of payouts that kept none)');
    for (const line of r.screen?.lines ?? []) {
      kept.add(line);
      say(`  ${line}`);
    }
  }
  const now = bodyLines(s, opts.all).filter((l) => !kept.has(l));
  say(now.length ? 'Now:' : 'Now: as reviewed');
  for (const line of now) say(`  ${line}`);
  const last = [...reviews].reverse().find((r) => r.screen)?.screen;
  const nowWords = attentionOf(s);
  const columns: Array<[string, ReadonlyMap<number, string[]>]> = last
    ? [
        ['as reviewed', new Map(last.attention.map((a) => [a.row, a.attention]))],
        ['now', nowWords],
      ]
    : [['attention', nowWords]];
  await screenTable(s, output, { all: opts.all, grouped: output.stdoutIsTerminal }, columns);
}
