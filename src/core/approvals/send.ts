import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { UsageError } from '../../errors.js';
import { SEND_PREPARE } from '../documents.js';
import { ExitCode } from '../../exit-codes.js';
import { shellWord } from '../../output/display.js';
import { shortTime } from '../../output/table.js';
import type { PayoutRequest } from '../../api/types.js';
import {
  privateTmp,
  runIdFor,
  stagedPages,
  stagedPayouts,
  stagedRetries,
} from '../../state/index.js';
import type { PreparedRun } from '../../state/pg/approvals.js';
import { refuseFailedEarlier } from '../send/failed-earlier.js';
import type { SendOptions } from '../send/options.js';
import { totalsDoc } from '../send/render.js';
import { priorState } from '../send/resume.js';
import type { SendDeps } from '../send/staging.js';
import { checkMaxTotals, splitRun } from '../send/split.js';
import { type Destination, summaryText } from '../send/summary.js';
import type { PriorRow } from '../../domain/history.js';
import type { CurrencyTable } from '../../money/currencies.js';
import type { Output } from '../../output/output.js';
import type { RunIntake } from '../../state/index.js';
import type { RunPlan } from '../send/plan.js';
import { SANDBOX_SERVICE_KEY } from '../service.js';
import {
  type ApprovalStatus,
  approvalStatus,
  approvedFile,
  claimApproval,
  prepareCommandOf,
  recordPrepared,
  refuseOtherBound,
} from './gate.js';

/**
 * `send --approved RUN`: writes the approved run's payouts to a private file, sent as any file
 * is (so every check of a send applies to them), and removes it afterwards.
 */
export async function sendApproved(
  opts: SendOptions & { approved: string },
  deps: SendDeps & { stateUrl: string },
  sendFiles: (opts: SendOptions, deps: SendDeps) => Promise<number>,
): Promise<number> {
  if (opts.files.length) {
    throw new UsageError(
      `send --approved ${opts.approved} sends the approved run's payouts from the shared history: give no files`,
    );
  }
  const dir = privateTmp(join(deps.stateDir, 'tmp'));
  const { path, prep } = await approvedFile(deps.stateUrl, opts.approved, dir, deps.pid);
  try {
    const where = await deps.preview();
    refuseOtherBound(prep, {
      service: where.serviceKey === SANDBOX_SERVICE_KEY ? undefined : where.baseUrl,
      batch_reference: opts.batchReference,
      webhook_url: opts.webhookUrl,
    });
    const from = {
      ...opts,
      files: [path],
      format: 'csv' as const,
      batchReference: prep.batch_reference ?? undefined,
      webhookUrl: prep.webhook_url ?? undefined,
    };
    return await sendFiles(from, { ...deps, approvedName: `approved:${prep.prep_id}` });
  } finally {
    rmSync(path, { force: true });
  }
}

/** What preparing and the approval gate need of a send run (`SendRun` fits). */
export interface GatedSend {
  readonly opts: SendOptions;
  readonly deps: SendDeps;
  readonly plan: RunPlan;
  readonly currencies: CurrencyTable;
  readonly output: Output;
  readonly rows: RunIntake;
  priorRows(serviceKey: string): Promise<PriorRow[]>;
  /** Those of the recipients the service's runs paid before; null: the history has no run of it. */
  paidRecipients(serviceKey: string, recipients: () => string[]): Promise<Set<string> | null>;
  destination(where: { baseUrl?: string; profile?: string }): Destination;
}
/** A dry run's staged payouts (no descriptions kept), as the gate takes them. */
function stagedOfDryRun(rows: RunIntake): Array<{ row: number; payout: PayoutRequest }> {
  const out: Array<{ row: number; payout: PayoutRequest }> = [];
  // One page: a dry run's rows are a view, which a page at a time would read again and again.
  for (const page of stagedPages(rows, Number.MAX_SAFE_INTEGER)) {
    for (const { row, reference_id, amount, currency, recipient } of page) {
      out.push({ row, payout: { reference_id, amount, currency, recipient } });
    }
  }
  return out;
}

/** What the gate needs of a run: its payouts (a retry's with its original), totals, and the command that prepares it. */
function gated(run: GatedSend, serviceKey: string) {
  return {
    url: run.deps.stateUrl!,
    serviceKey,
    // Read only once the rule is known to apply.
    get payouts() {
      if (run.opts.dryRun) return stagedOfDryRun(run.rows);
      const retryOf = new Map(stagedRetries(run.rows).map((r) => [r.row, r.retry_of]));
      return stagedPayouts(run.rows).map((s) => ({ ...s, retry_of: retryOf.get(s.row) }));
    },
    totals: run.plan.totals,
    currencies: run.currencies,
    prepareCommand: prepareCommandOf(run.opts.files),
    batchReference: run.plan.batchReference,
    webhookUrl: run.plan.webhookUrl,
    approvedPrep: run.deps.approvedName?.replace(/^approved:/, ''),
    withoutDescriptions: run.opts.dryRun,
  };
}

/** What the approval rule says of this run (the summary's Approval: line). */
export function approvalStatusOf(run: GatedSend, serviceKey: string): Promise<ApprovalStatus> {
  return approvalStatus(gated(run, serviceKey));
}

/**
 * Before anything is sent, under the lock: records that this run sends its approved run,
 * once (`claimApproval`); a UsageError, nothing sent, when the approval may not send it.
 */
export function claimRun(
  run: GatedSend,
  serviceKey: string,
  approved: PreparedRun,
  sendsNothing: boolean,
): Promise<void> {
  return claimApproval(run.deps.stateUrl!, approved, {
    runId: runIdFor(serviceKey, run.plan.inputHash),
    sendsNothing,
  });
}

/**
 * --prepare: checks the files as a send does (what earlier runs hold, --max-total), shows
 * the summary, and records the run as prepared for another person's approval; sends nothing.
 */
export async function prepareRun(run: GatedSend): Promise<number> {
  const { opts, plan, currencies, output, deps } = run;
  const where = await deps.preview();
  if (where.serviceKey === undefined || where.baseUrl === undefined) {
    throw new UsageError(
      'send --prepare needs the service it is for: set its base URL (--base-url, PAYOUTS_BASE_URL or the profile)',
    );
  }
  const prior = priorState(await run.priorRows(where.serviceKey));
  refuseFailedEarlier(prior, run.rows, runIdFor(where.serviceKey, plan.inputHash));
  const split = splitRun(plan, prior, currencies, opts.chunkSize);
  checkMaxTotals(split, opts.maxTotals, currencies);
  const { summaryNotes } = await import('../send/notes.js');
  const notes = await summaryNotes(run, { ...where, sandbox: false });
  notes.approval = notes.approved
    ? `${notes.approval} (an approved run already holds exactly these payouts)`
    : notes.refusal
      ? 'needed: another person approves this prepared run'
      : `${notes.approval} (it is prepared all the same)`;
  const view = { plan, split, dest: run.destination(where), maxTotals: opts.maxTotals, notes };
  if (!output.json) output.info(summaryText(view, currencies, output.errColor));
  const prep = await recordPrepared(gated(run, where.serviceKey), {
    service: where.baseUrl,
    inputs: plan.sources.map((s) => s.name),
    totals: totalsDoc(plan.totals, currencies),
    ...(plan.batchReference ? { batch_reference: plan.batchReference } : {}),
    ...(plan.webhookUrl ? { webhook_url: plan.webhookUrl } : {}),
    ...(opts.note ? { note: opts.note } : {}),
  });
  const doc = await preparedDocOf(deps.stateUrl!, prep);
  if (output.json) {
    // A prepared run, not a send document: its `command` says so.
    output.document({ ...doc, command: SEND_PREPARE });
    return ExitCode.ok;
  }
  for (const d of doc.duplicates) {
    output.warn(
      `run ${d.prepared_run_id} (${d.state}) already holds exactly these payouts: one of the two is enough; the other expires unused`,
    );
  }
  output.print(`Prepared run ${prep.prep_id}: nothing was sent.`);
  output.info(
    `Another person approves it with \`payouts approve ${prep.prep_id}\` (until ${shortTime(prep.expires_at)} UTC); then \`payouts send ${opts.files.map(shellWord).join(' ')}\` or \`payouts send --approved ${prep.prep_id}\` sends it`,
  );
  return ExitCode.ok;
}

/** A prepared run's one --json document, read back from the history. */
async function preparedDocOf(
  url: string,
  prep: PreparedRun,
): Promise<ReturnType<typeof import('./screen-view.js').preparedDoc>> {
  const [{ withShared }, { preparedScreen }, { preparedDoc }] = await Promise.all([
    import('./common.js'),
    import('./screen.js'),
    import('./screen-view.js'),
  ]);
  return withShared(url, async (h) => preparedDoc(await preparedScreen(h, prep)));
}
