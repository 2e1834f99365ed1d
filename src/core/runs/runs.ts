import { UsageError } from '../../errors.js';
import { displayText, shellWord } from '../../output/display.js';
import type { Output } from '../../output/output.js';
import { shortTime } from '../../output/table.js';
import {
  liveRunsIn,
  type RowReader,
  type RowWriter,
  type RunSummary,
  type RunsPage,
  readRunIn,
  runPageIn,
} from '../../state/index.js';
import { statusKind } from '../../domain/statuses.js';
import { payoutJson, payoutsTable } from './payouts.js';
import { type RunsSource, withRunReader, withSession } from './reader.js';
import type { RetryRequest } from './retry.js';

/** A run's counts in a line, those that are not zero: "4 succeeded (1 paid by a retry), 8 sent earlier". */
function countsText(r: RunSummary): string {
  const c = r.counts;
  const parts = [
    [c.success, 'succeeded'],
    [c.failed, 'failed'],
    [c.canceled, 'canceled'],
    [c.pending, 'pending'],
    [c.in_flight, 'in flight'],
    [c.sent_earlier, 'sent earlier'],
    [c.not_sent, 'not sent'],
  ] as const;
  const text = parts.filter(([n]) => n > 0).map(([n, what]) => `${n} ${what}`);
  // By the one rule, a failed payout its retry paid is among those that succeeded.
  if (c.paid_by_retry) text[0] += ` (${c.paid_by_retry} paid by a retry)`;
  return text.length ? text.join(', ') : 'no payouts';
}

/** A run as listed: its summary, and whether a live session of a shared history is sending it. */
type ListedRun = RunSummary & { running?: boolean };

/** Who sent a run: "user@host", "user@host (role ana)" on a shared history, "" when not recorded. */
export function sentByText(r: RunSummary): string {
  const { os_user, host, db_user } = r.sent_by;
  if (!os_user && !host) return '';
  const role = db_user && db_user !== os_user ? ` (role ${db_user})` : '';
  return `${os_user ?? '?'}@${host ?? '?'}${role}`;
}

/**
 * The command that finishes a run whose payouts are in flight or not sent: the same files to
 * the same service. Undefined when nothing is left to do, or while its sender is still at it.
 */
export function finishCommand(r: ListedRun): string | undefined {
  if (r.running) return undefined;
  if (r.counts.in_flight === 0 && r.counts.not_sent === 0) return undefined;
  const to = r.service === 'sandbox' ? '--sandbox' : `--base-url ${shellWord(r.service)}`;
  const approved = /^approved:(p[0-9a-f]+)$/.exec(r.inputs[0] ?? '')?.[1];
  const words = approved ? ['--approved', approved] : [...r.inputs, ...r.send_args];
  return `payouts send ${words.map(shellWord).join(' ')} ${to}`;
}

/** What is left of a run, and the command that finishes it, in a sentence. */
function finishLine(r: ListedRun): string | undefined {
  if (r.running) {
    const by = sentByText(r);
    return `run ${r.run_id} is being sent${by ? ` by ${displayText(by)}` : ''} right now: leave it to its sender`;
  }
  const command = finishCommand(r);
  if (!command) return undefined;
  const c = r.counts;
  const left = [c.in_flight && `${c.in_flight} in flight`, c.not_sent && `${c.not_sent} not sent`]
    .filter(Boolean)
    .join(', ');
  return `run ${r.run_id} has payouts ${left}: to finish it, run \`${command}\` in the folder it ran in (what was in flight is read back first; nothing is sent twice)`;
}

/** A run in --json, every key always present (docs/json.md, docs/schema/runs-list.schema.json). */
function runJson(r: ListedRun) {
  return {
    run_id: r.run_id,
    service: r.service,
    client_id: r.client_id,
    inputs: r.inputs,
    created_at: r.created_at,
    updated_at: r.updated_at,
    payout_count: r.payout_count,
    sent_by: r.sent_by,
    counts: r.counts,
    running: r.running ?? null,
    finish_command: finishCommand(r) ?? null,
  };
}

/** Runs `payouts runs` shows at a time. */
export const RUNS_PAGE = 20;

/** Which runs `payouts runs` shows: a page (from 1), or every run. */
export interface RunListing {
  page: number;
  all: boolean;
}

/** The runs of a page, a shared history's that a live session is sending marked running. */
async function listedRuns(
  from: RunsSource,
  want: RunsPage,
  read: RowReader,
  keep: RowWriter,
): Promise<{ runs: ListedRun[]; total: number }> {
  const listed = await runPageIn(read, want, keep);
  if (!from.stateUrl) return listed;
  const live = await liveRunsIn(read);
  return { ...listed, runs: listed.runs.map((r) => ({ ...r, running: live.has(r.run_id) })) };
}

/**
 * `payouts runs`: the recorded runs, the most recently active first, a page of RUNS_PAGE at a
 * time (a history's size costs the page nothing: runs are read by their index and each run's
 * counts are kept as of its last commit), or every run.
 */
export function showRunList(
  from: RunsSource,
  output: Output,
  listing: RunListing = { page: 1, all: false },
): Promise<number> {
  return withSession(from, (f) => listRuns(f, output, listing));
}

/** showRunList's work, every read of a shared history on one session. */
async function listRuns(from: RunsSource, output: Output, listing: RunListing): Promise<number> {
  const want: RunsPage = listing.all
    ? { from: 0, size: Number.POSITIVE_INFINITY }
    : { from: (listing.page - 1) * RUNS_PAGE, size: RUNS_PAGE };
  const { runs, total } = (await withRunReader(from, output, (read, keep) =>
    listedRuns(from, want, read, keep),
  )) ?? { runs: [], total: 0 };
  const more = want.from + runs.length < total;
  const prepared = from.stateUrl ? await import('./prepared.js') : undefined;
  const preps =
    prepared && from.session ? await prepared.preparedRuns(await from.session(from.stop)) : [];
  if (output.json) {
    output.document({
      runs: runs.map(runJson),
      total_runs: total,
      next_page: more ? listing.page + 1 : null,
      prepared_runs: preps,
    });
    return 0;
  }
  if (!total && !preps.length) {
    output.print('No runs journaled yet.');
    return 0;
  }
  if (runs.length) await printRunTable(runs, output);
  output.info(pageLine(want, runs.length, total, listing.page, more));
  // After the runs, so that a script reading the first table's header reads the runs'.
  await prepared?.printPreparedTable(preps, output);
  return 0;
}

/** Which runs a page showed of how many, and how to see more. */
function pageLine(want: RunsPage, shown: number, total: number, page: number, more: boolean) {
  const pages = Math.max(1, Math.ceil(total / RUNS_PAGE));
  if (!shown)
    return `Page ${page} holds no runs: there are ${total} (${pages} pages of ${RUNS_PAGE})`;
  const which = `Runs ${want.from + 1} to ${want.from + shown} of ${total}, the most recently active first`;
  return more
    ? `${which}: \`payouts runs --page ${page + 1}\` shows the next ${RUNS_PAGE}, \`payouts runs --all\` every run`
    : which;
}

/** The runs' table, and the command that finishes each run left unfinished. */
async function printRunTable(runs: ListedRun[], output: Output): Promise<void> {
  const rows = runs.map((r) => [
    r.run_id,
    shortTime(r.updated_at),
    displayText(sentByText(r)),
    displayText(r.service),
    r.inputs.map(displayText).join(' '),
    String(r.payout_count),
    r.running ? `running: ${countsText(r)}` : countsText(r),
  ]);
  output.print(
    await output.table(RUNS_HEAD, rows, {
      wrap: ['sent by', 'service', 'inputs', 'states'],
      below: ['inputs', 'sent by', 'service'],
    }),
  );
  for (const r of runs) {
    const line = finishLine(r);
    if (line) output.info(line);
  }
}

/** The columns of `payouts runs`. */
const RUNS_HEAD = [
  'run',
  'last activity (UTC)',
  'sent by',
  'service',
  'inputs',
  'payouts',
  'states',
];

/** `payouts runs show ID`: one run's payouts and states; `retry`: its --failed-out file; `view`: a prepared run's. */
export async function showRun(
  from: RunsSource,
  id: string,
  output: Output,
  retry?: RetryRequest,
  view: { all?: boolean; baseUrl?: string } = {},
): Promise<number> {
  if (retry) (await import('./retry.js')).checkRetryTarget(retry);
  return withSession(from, (f) => showOne(f, id, output, { retry, view }));
}

/** showRun's work, every read of a shared history on one session. */
async function showOne(
  from: RunsSource,
  id: string,
  output: Output,
  how: { retry: RetryRequest | undefined; view: { all?: boolean; baseUrl?: string } },
): Promise<number> {
  const { retry, view } = how;
  const prepared = from.session ? await import('./prepared.js') : undefined;
  if (prepared && from.session && /^p[0-9a-f]*$/.test(id) && !retry) {
    if (await prepared.showPrepared(await from.session(from.stop), id, output, view)) return 0;
  }
  const shown = await withRunReader(from, output, async (read, keep) => {
    const found = await readRunIn(read, id, keep);
    const running = from.stateUrl ? (await liveRunsIn(read)).has(found.summary.run_id) : undefined;
    const run = { ...found, summary: { ...found.summary, running } };
    if (!retry) return { run, written: undefined };
    const { writeRunRetry } = await import('./retry.js');
    return { run, written: await writeRunRetry(run, retry, { read, output }) };
  });
  if (!shown) throw new UsageError(`no run id starts with ${JSON.stringify(id)}: see payouts runs`);
  const { run, written } = shown;
  const { summary, payouts } = run;
  const approval =
    prepared && from.session
      ? await prepared.approvalOf(await from.session(from.stop), summary.run_id)
      : undefined;
  if (output.json) {
    output.document({
      ...runJson(summary),
      approval: approval ? approval.doc : null,
      failed_out: retry ? { file: retry.path, payout_count: written ?? 0 } : null,
      payouts: payouts.map(payoutJson),
    });
    return 0;
  }
  if (retry) return 0;
  const inputs = summary.inputs.map(displayText).join(' ');
  output.printAside(`Run ${summary.run_id}: ${inputs} -> ${displayText(summary.service)}`);
  const by = sentByText(summary);
  output.printAside(
    `Created ${shortTime(summary.created_at)} UTC${by ? ` by ${displayText(by)}` : ''}, last activity ${shortTime(summary.updated_at)} UTC; ${summary.running ? 'running: ' : ''}${countsText(summary)}`,
  );
  if (approval) {
    const { eventLines } = await import('../approvals/common.js');
    output.printAside(`Approved run ${approval.run.prep_id}:`);
    for (const line of eventLines(approval.run)) output.printAside(`  ${displayText(line)}`);
  }
  if (payouts.length) output.print(await payoutsTable(payouts, output, summary.sent_by.db_user));
  const line = finishLine(summary);
  if (line) output.info(line);
  const { retriedLine } = await import('./retry.js');
  const retried = retriedLine(run);
  if (retried) output.info(retried.replace(', not written', ''));
  if (
    payouts.some(
      (p) => p.state.state === 'confirmed' && statusKind(p.state.status) === 'failed' && !p.retried,
    )
  ) {
    output.info(
      `A failed payout needs a new reference_id: \`payouts runs show ${summary.run_id} --failed-out FILE\` writes the failed and canceled ones to a file to send again`,
    );
  }
  return 0;
}
