/**
 * `reconcile --failed-out FILE`: every payout reconcile found failed or canceled that no retry
 * took on, written as a retry file (the writer of `runs show --failed-out`, in the conventions
 * the first such payout's run was read in, or --report-locale's), sending nothing.
 */
import { resolve } from 'node:path';
import type { Output } from '../../output/output.js';
import { historyStyleOf, styleText } from '../report-style.js';
import { type RunsSource, withRunReader } from '../runs/reader.js';
import { checkNewReferences, type RetryRequest } from '../runs/retry.js';
import { type RetryRow, retryHint, writeRetryFile } from '../send/report.js';
import type { ScopeRun } from '../../state/index.js';
import { shellWord } from '../../output/display.js';
import { type Reconciled, toRetry } from './judge.js';

/** What was written. */
export interface FailedOut {
  file: string;
  payout_count: number;
}

/** Writes the retry file of a reconcile; says on stderr what it holds and what to do next. */
export async function writeReconcileRetry(
  rows: readonly Reconciled[],
  runs: readonly ScopeRun[],
  req: RetryRequest,
  deps: { from: RunsSource; output: Output; service: string },
): Promise<FailedOut> {
  const failed = rows.filter(toRetry);
  const retry: RetryRow[] = failed.map(({ payout: { payout: p } }) => ({
    reference_id: p.reference_id,
    new_reference_id: req.suffix === undefined ? '' : `${p.reference_id}${req.suffix}`,
    amount: p.amount,
    currency: p.currency,
    recipient: p.recipient,
    ...(p.description ? { description: p.description } : {}),
  }));
  if (req.suffix !== undefined && retry.length) {
    const suffix = req.suffix;
    await withRunReader(deps.from, deps.output, (read) =>
      checkNewReferences(retry, deps.service, read, suffix),
    );
  }
  const first = runs.find((r) => r.run_id === failed[0]?.payout.run_id) ?? runs[0];
  const { style, source } = historyStyleOf(req.locale, first ?? { run_id: '', csv_style: null });
  await writeRetryFile(resolve(req.cwd, req.path), retry, { encoding: req.encoding, style });
  const n = retry.length;
  if (!n) {
    deps.output.info(`No payout is left to retry: ${req.path} holds only its header`);
    return { file: req.path, payout_count: 0 };
  }
  const how = styleText(style, source, req.encoding);
  const what = `${n} failed or canceled payout${n === 1 ? '' : 's'} written to ${req.path} (${how})`;
  deps.output.info(
    req.suffix === undefined
      ? `${what}: ${retryHint(req.path)}`
      : `${what}, each under reference_id${req.suffix}: check them, then \`payouts send ${shellWord(req.path)}\``,
  );
  return { file: req.path, payout_count: n };
}
