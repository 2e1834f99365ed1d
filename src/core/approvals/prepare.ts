/**
 * The two sends of an approval (docs/approvals.md): `send --prepare` records a run for another
 * person's approval, checked as a send is from the history; `send --approved RUN` writes the
 * approved run's payouts to a private file, sent as any file is.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { serviceIdentity } from '../../api/base-url.js';
import { UsageError } from '../../errors.js';
import { replaceFile } from '../../files.js';
import { guardFormula } from '../../input/formula.js';
import { SEND_PREPARE } from '../documents.js';
import { ExitCode } from '../../exit-codes.js';
import { displayText } from '../../output/display.js';
import { shortTime } from '../../output/table.js';
import { privateTmp, runIdFor } from '../../state/index.js';
import type { PreparedPayout, PreparedRun } from '../../state/pg/approvals.js';
import { preparedFigures } from '../../state/pg/prepared-figures.js';
import { findPrepared } from '../../state/pg/approvals.js';
import type { PgHistory } from '../../state/pg/history.js';
import { redactWord } from '../../state/pg/url.js';
import { decide } from '../send/decide.js';
import { factsOf, refuse, tellingOf } from '../send/facts.js';
import { splitOf } from '../send/fates.js';
import type { SendOptions } from '../send/options.js';
import { checkMaxTotals } from '../send/refusals.js';
import { totalsDoc } from '../send/render.js';
import type { SendContext, SendDeps } from '../send/staging.js';
import { destinationOf, summaryText } from '../send/summary.js';
import { SANDBOX_SERVICE_KEY } from '../service.js';
import { prepState, type SharedAt, withShared } from './common.js';
import { boundDifferences, notApproved, recordPrepared, sendCommandOf } from './gate.js';
import { preparedScreen } from './screen.js';
import { preparedDoc } from './screen-doc.js';
import { gated, sendArgsOf, sharedOf, summaryNotes } from './send.js';

/**
 * --prepare: checks the files as a send does from the history (what earlier runs hold,
 * --max-total), shows the summary, and records the run as prepared; sends nothing.
 */
export async function prepareRun(ctx: SendContext): Promise<number> {
  const { opts, plan, currencies, output, deps } = ctx;
  const where = await deps.preview();
  if (where.serviceKey === undefined || where.baseUrl === undefined) {
    throw new UsageError(
      'send --prepare needs the service it is for: set its base URL (--base-url, PAYOUTS_BASE_URL or the profile)',
    );
  }
  const runId = runIdFor(where.serviceKey, plan.inputHash);
  const decision = decide(await factsOf(ctx, { serviceKey: where.serviceKey, runId }), 'prepare');
  refuse(decision, tellingOf(ctx));
  const split = splitOf(decision, plan, currencies, opts.chunkSize);
  checkMaxTotals(split, opts.maxTotals, currencies);
  const notes = await summaryNotes(ctx, { ...where, sandbox: false });
  notes.approval = notes.approved
    ? `${notes.approval} (an approved run already holds exactly these payouts)`
    : notes.refusal
      ? 'needed: another person approves this prepared run'
      : `${notes.approval} (it is prepared all the same)`;
  const view = { plan, split, dest: destinationOf(ctx, where), maxTotals: opts.maxTotals, notes };
  if (!output.json) output.info(summaryText(view, currencies, output.errColor));
  const prep = await recordPrepared(gated(ctx, where.serviceKey), {
    service: where.baseUrl,
    inputs: plan.sources.map((s) => s.name),
    totals: totalsDoc(plan.totals, currencies),
    ...(plan.batchReference ? { batch_reference: plan.batchReference } : {}),
    ...(opts.note ? { note: opts.note } : {}),
    send_args: sendArgsOf(ctx),
  });
  const doc = await withShared(sharedOf(ctx), async (h) =>
    preparedDoc(await preparedScreen(h, prep)),
  );
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
    `Another person approves it with \`payouts approve ${prep.prep_id}\` (until ${shortTime(prep.expires_at)} UTC); then \`${sendCommandOf(opts.files, prep.send_args)}\` or \`payouts send --approved ${prep.prep_id}\` sends it`,
  );
  return ExitCode.ok;
}

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
  // One session reads the approved run and serves its send.
  const { PgHistory } = await import('../../state/pg/history.js');
  const session = await PgHistory.open(deps.stateUrl, deps.interrupt);
  try {
    return await sendApprovedOn(session, { opts, deps, dir, sendFiles });
  } finally {
    await session.close();
  }
}

/** sendApproved on its session. */
async function sendApprovedOn(
  session: PgHistory,
  a: {
    opts: SendOptions & { approved: string };
    deps: SendDeps & { stateUrl: string };
    dir: string;
    sendFiles: (opts: SendOptions, deps: SendDeps) => Promise<number>;
  },
): Promise<number> {
  const { opts, deps, dir, sendFiles } = a;
  const { path, prep } = await approvedFile(session, opts.approved, dir, deps.pid);
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
      webhookUrl: opts.webhookUrl ?? keptWebhook(prep),
    };
    return await sendFiles(from, { ...deps, session, approvedName: `approved:${prep.prep_id}` });
  } finally {
    rmSync(path, { force: true });
  }
}

/**
 * The webhook URL an approved run goes with: the history keeps it without its password, which
 * the sender gives again with --webhook-url (refuseOtherBound checks it is the same URL).
 */
function keptWebhook(prep: PreparedRun): string | undefined {
  const url = prep.webhook_url ?? undefined;
  if (url === undefined || !/:\*\*\*@|password=\*\*\*/i.test(url)) return url;
  throw new UsageError(
    `run ${prep.prep_id} goes with the webhook URL ${displayText(url)}, whose password the shared history does not keep: give the whole URL with --webhook-url; nothing was sent`,
  );
}

/** A CSV cell, quoted when it must be (RFC 4180). */
function cell(text: string | null): string {
  if (text === null) return '';
  return /[",\r\n]/.test(text) || text !== text.trim() ? `"${text.replace(/"/g, '""')}"` : text;
}

/**
 * `send --approved RUN`: the approved run's payouts from the history, written to a CSV file
 * in `dir` for the send to read as it reads any file; the run with its batch and webhook.
 */
export async function approvedFile(
  at: SharedAt,
  prepId: string,
  dir: string,
  pid: number,
): Promise<{ path: string; prep: PreparedRun }> {
  return withShared(at, async (h) => {
    const prep = await findPrepared(h, prepId);
    if (!prep)
      throw new UsageError(
        `no prepared run id starts with ${JSON.stringify(prepId)}: see payouts runs`,
      );
    const state = prepState(prep);
    if (state !== 'approved' && state !== 'sent') throw notApproved(prep);
    const figures = await preparedFigures(h, prep);
    if (figures.claims.length) {
      throw new UsageError(
        `run ${prep.prep_id} says ${figures.claims.join('; ')}: it was not recorded by payouts, and is not sent; nothing was sent`,
      );
    }
    const path = join(dir, `approved-${prep.prep_id}-${pid}.csv`);
    replaceFile(path, (append) => append(approvedCsv(figures.payouts)));
    return { path, prep };
  });
}

/**
 * The CSV text of an approved run's payouts; with retries, a retry file's columns (the
 * original in reference_id, the reference sent in new_reference_id), so the send links them.
 */
function approvedCsv(payouts: PreparedPayout[]): string {
  const retries = payouts.some((p) => p.retry_of !== null);
  const lines = payouts.map((p) => {
    const refs = !retries
      ? [p.reference_id]
      : p.retry_of === null
        ? [p.reference_id, '']
        : [p.retry_of, p.reference_id];
    // With a new_reference_id column it reads as a retry file, whose cells intake unguards.
    const cells = [...refs, p.amount, p.currency, p.recipient, p.description];
    return cells.map((c) => cell(retries && c !== null ? guardFormula(c) : c)).join(',');
  });
  const head = `reference_id,${retries ? 'new_reference_id,' : ''}amount,currency,recipient,description`;
  return `${head}\n${lines.join('\n')}\n`;
}

/**
 * `send --approved RUN` goes to the service the run was approved for, with its batch
 * reference and webhook URL: a UsageError (nothing sent) naming what an option or the
 * configured base URL would change.
 */
export function refuseOtherBound(
  prep: PreparedRun,
  asked: { service?: string; batch_reference?: string; webhook_url?: string },
): void {
  const approved = {
    service: serviceIdentity(prep.service),
    batch_reference: prep.batch_reference,
    webhook_url: prep.webhook_url,
  };
  const mine = {
    service: asked.service === undefined ? approved.service : serviceIdentity(asked.service),
    batch_reference: asked.batch_reference ?? approved.batch_reference,
    webhook_url:
      asked.webhook_url === undefined ? approved.webhook_url : redactWord(asked.webhook_url),
  };
  const diff = boundDifferences(mine, approved);
  if (diff.length) {
    throw new UsageError(
      `run ${prep.prep_id} was approved to go as it was prepared: ${diff.join('; ')}. Leave out the option, or prepare the payouts again for it; nothing was sent`,
    );
  }
}
