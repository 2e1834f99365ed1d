/** Prepared runs (docs/approvals.md) as `payouts runs` and `runs show` list them. */
import type { Output } from '../../output/output.js';
import { displayText } from '../../output/display.js';
import { shortTime } from '../../output/table.js';
import {
  findPrepared,
  listPrepared,
  type PreparedRun,
  preparedFigures,
  withFigures,
} from '../../state/pg/approvals.js';
import { preparedSummary } from '../approvals/approve.js';
import { eventLines, prepState, totalsLine, withShared } from '../approvals/common.js';

/** A prepared run in --json: its fields, its state and what happened to it, with who and when. */
export function preparedJson(p: PreparedRun) {
  const { id: _, os_user, host, prepared_by, events, ...rest } = p;
  return {
    kind: 'prepared' as const,
    prepared_run_id: p.prep_id,
    state: prepState(p),
    ...rest,
    prepared_by: { role: prepared_by, os_user, host },
    events: events.map(({ by_role, os_user: u, host: h, ...e }) => ({
      ...e,
      by: { role: by_role, os_user: u, host: h },
    })),
  };
}

/** Every prepared run of a shared history, the newest first. */
export function preparedRuns(url: string): Promise<PreparedRun[]> {
  return withShared(url, listPrepared);
}

/** The prepared run whose approval run `runId` sent, if any. */
export async function approvalOf(url: string, runId: string): Promise<PreparedRun | undefined> {
  const all = await preparedRuns(url);
  return all.find((p) => p.events.some((e) => e.decision === 'sent' && e.run_id === runId));
}

/** The prepared runs' table of `payouts runs`, after the runs'. */
export async function printPreparedTable(prepared: PreparedRun[], output: Output): Promise<void> {
  if (!prepared.length) return;
  const rows = prepared.map((p) => {
    const last = p.events.at(-1);
    const state = prepState(p);
    const by = last ? ` by ${last.by_role}` : state === 'prepared' ? ` by ${p.prepared_by}` : '';
    return [
      p.prep_id,
      shortTime(p.created_at),
      displayText(p.prepared_by),
      `${state}${displayText(by)}`,
      String(p.payout_count),
      totalsLine(p),
      displayText(p.note ?? ''),
    ];
  });
  output.printAside('Prepared runs (payouts approve RUN):');
  output.print(
    await output.table(
      ['prepared run', 'prepared (UTC)', 'prepared by', 'state', 'payouts', 'totals', 'note'],
      rows,
      { wrap: ['state', 'totals', 'note'], below: ['note'] },
    ),
  );
}

/** `runs show` of a prepared run; false when no prepared run has the id. */
export async function showPrepared(url: string, id: string, output: Output): Promise<boolean> {
  // The figures shown are computed from the run's payouts (preparedFigures), not its own row.
  const p = await withShared(url, async (h) => {
    const found = await findPrepared(h, id);
    return found && withFigures(found, await preparedFigures(h, found));
  });
  if (!p) return false;
  output.result(preparedJson(p), () =>
    [preparedSummary(p), `State:          ${prepState(p)}`, ...eventLines(p)].join('\n'),
  );
  return true;
}
