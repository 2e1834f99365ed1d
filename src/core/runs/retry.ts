import { resolve } from 'node:path';
import { quoteValue, UsageError } from '../../errors.js';
import { checkWriteTargets } from '../../files.js';
import { referenceProblem } from '../../input/reference.js';
import { moneyText } from '../../money/amount.js';
import { displayText, shellWord } from '../../output/display.js';
import type { Output } from '../../output/output.js';
import { heldReferences, type RowReader, type RunDetail } from '../../state/index.js';
import { type ReportEncoding, type RetryRow, retryHint, writeRetryFile } from '../send/report.js';
import { type CsvStyle, historyStyleOf, styleText } from '../report-style.js';
import { colourStatus } from '../send/render.js';
import { heldKind } from '../../domain/statuses.js';
import type { HeldRef } from '../../domain/chain.js';

/** What `runs show --failed-out` is asked to write. */
export interface RetryRequest {
  /** The file, as the user named it. */
  path: string;
  /** Where relative paths are resolved. */
  cwd: string;
  /** Appended to each failed reference to make its new one (--new-references); none: left to fill in. */
  suffix?: string;
  encoding?: ReportEncoding;
  /** payouts' own folders (state, config): no file in them is written over. */
  kept?: string[];
  /** --report-locale: else the conventions the run's files were read in. */
  locale?: CsvStyle;
}

/**
 * The failed and canceled payouts of a run, as retry rows; new references derived when asked.
 * A payout already retried is left out: its chain goes on from that retry, never from here.
 */
export function retryRows(run: RunDetail, suffix?: string): Array<RetryRow & { status: string }> {
  const rows: Array<RetryRow & { status: string }> = [];
  for (const p of run.payouts) {
    if (p.state.state !== 'confirmed') continue;
    if (heldKind({ state: 'done', status: p.state.status }) !== 'failed') continue;
    if (p.retried) continue;
    rows.push({
      reference_id: p.reference_id,
      new_reference_id: suffix === undefined ? '' : `${p.reference_id}${suffix}`,
      amount: p.amount,
      currency: p.currency,
      recipient: p.recipient,
      description: p.description ?? undefined,
      status: p.state.status,
    });
  }
  return rows;
}

/** The words for a retry's state, after "retried and". */
const RETRIED: Record<HeldRef['kind'], string> = {
  success: 'paid',
  pending: 'pending',
  doubt: 'in doubt',
  failed: 'failed again',
};

/**
 * "3 retried and paid, not written (as NEW-1, NEW-2 and 1 more)": the failed payouts of a
 * run that a retry already took on, by what became of it; undefined when there are none.
 */
export function retriedLine(run: RunDetail): string | undefined {
  const byKind = new Map<HeldRef['kind'], string[]>();
  for (const p of run.payouts) {
    if (p.retried)
      byKind.set(p.retried.kind, [...(byKind.get(p.retried.kind) ?? []), p.retried.ref]);
  }
  if (!byKind.size) return undefined;
  const parts = [...byKind].map(([kind, refs]) => {
    const shown = refs.slice(0, 3).map(displayText).join(', ');
    const more = refs.length > 3 ? ` and ${refs.length - 3} more` : '';
    return `${refs.length} retried and ${RETRIED[kind]} (as ${shown}${more})`;
  });
  const again = byKind.has('failed') ? ': a retry that failed is retried from its own run' : '';
  return `${parts.join(', ')}, not written${again}`;
}

/** Refuses derived references that could not be looked up, or that the service's runs already hold. */
export async function checkNewReferences(
  rows: RetryRow[],
  service: string,
  read: RowReader,
  suffix: string,
): Promise<void> {
  for (const r of rows) {
    const problem = referenceProblem(r.new_reference_id);
    if (problem) {
      throw new UsageError(
        `--new-references ${quoteValue(suffix)}: reference_id ${quoteValue(r.new_reference_id)} ${problem.reason}: choose another suffix`,
      );
    }
  }
  const held = await heldReferences(
    read,
    service,
    rows.map((r) => r.new_reference_id),
  );
  const first = held[0];
  if (first) {
    throw new UsageError(
      `--new-references ${quoteValue(suffix)}: ${held.length} of the new references are already used at this service, such as ${quoteValue(first.reference_id)} (run ${first.run_id}): choose another suffix, such as -retry2`,
    );
  }
}

/**
 * `payouts runs show RUN --failed-out FILE`: writes the run's failed and canceled payouts as
 * an input file, sending nothing; each row needs a new reference_id before it is sent, which
 * --new-references derives (shown here for a person to check). Returns the rows written.
 */
export async function writeRunRetry(
  run: RunDetail,
  req: RetryRequest,
  deps: { read: RowReader; output: Output },
): Promise<number> {
  const { output } = deps;
  const rows = retryRows(run, req.suffix);
  if (req.suffix !== undefined && rows.length) {
    await checkNewReferences(rows, run.summary.service, deps.read, req.suffix);
  }
  const { style, source } = historyStyleOf(req.locale, run.summary);
  await writeRetryFile(resolve(req.cwd, req.path), rows, { encoding: req.encoding, style });
  const runId = run.summary.run_id;
  const retried = retriedLine(run);
  if (retried) output.info(retried);
  if (!rows.length) {
    output.info(
      retried
        ? `No payout of run ${runId} is left to retry: ${req.path} holds only its header`
        : `No payout of run ${runId} failed or was canceled: ${req.path} holds only its header`,
    );
    return 0;
  }
  const c = output.color;
  const head = ['reference_id', 'new_reference_id', 'status', 'amount', 'recipient'];
  const body = rows.map((r) => [
    displayText(r.reference_id),
    displayText(r.new_reference_id),
    colourStatus(r.status, c),
    moneyText(displayText(r.currency), r.amount, output.stdoutIsTerminal),
    displayText(r.recipient),
  ]);
  output.print(await output.table(head, body, { drop: ['recipient'] }));
  const n = rows.length;
  const how = styleText(style, source, req.encoding);
  const what = `${n} failed or canceled payout${n === 1 ? '' : 's'} of run ${runId} written to ${req.path} (${how})`;
  if (req.suffix === undefined) output.info(`${what}: ${retryHint(req.path)}`);
  else {
    output.info(
      `${what}, each under the new reference_id shown above: check them, then \`payouts send ${shellWord(req.path)}\``,
    );
  }
  return n;
}

/** Refuses, before the run is read, a --failed-out file payouts must not write (exit 2). */
export function checkRetryTarget(req: RetryRequest): void {
  checkWriteTargets([{ option: '--failed-out', path: req.path, cwd: req.cwd }], {
    folders: req.kept ?? [],
  });
}
