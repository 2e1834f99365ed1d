/** A run's state and engine, opened once the run is decided and its service locked. */
import { systemClock } from '../../clock.js';
import type { Output, Progress } from '../../output/output.js';
import { RunState, runIdFor } from '../../state/index.js';
import type { CurrencyTable } from '../../money/currencies.js';
import type { ServiceConnection } from '../service.js';
import { SendingLine } from './aside.js';
import { DEFAULT_SEND_RETRY, SendEngine } from './engine.js';
import { concurrencyOf, runReportStyle, type SendOptions } from './options.js';
import { storedStyle } from '../report-style.js';
import type { RunPlan } from './plan.js';
import { chargeMinorOf } from './render.js';
import type { SendDeps, Staging } from './staging.js';

/** What of a run (core/send/run.ts) opening its state and engine reads. */
interface RunParts {
  opts: SendOptions;
  deps: SendDeps;
  plan: RunPlan;
  currencies: CurrencyTable;
  output: Output;
}

/**
 * Opens the run's state: the staged rows become the run, or resume it when sent before. With
 * a shared history, the run is adopted there first, and every commit goes there as well; the
 * commits go to the writer that staging started.
 */
export async function openRunState(
  run: RunParts,
  staging: Staging,
  service: ServiceConnection,
  sendsNothing: boolean,
): Promise<RunState> {
  const { plan, deps } = run;
  const now = () => new Date((deps.clock ?? systemClock).now());
  const header = {
    service: service.sandbox ? 'sandbox' : service.settings.baseUrl,
    client_id: service.settings.clientId,
    inputs: plan.sources.map((s) => s.name),
    input_hash: plan.inputHash,
    payout_count: plan.payoutCount,
    ...(plan.batchReference ? { batch_reference: plan.batchReference } : {}),
    csv_style: storedStyle(runReportStyle(run.opts, plan).style),
  };
  const runId = runIdFor(service.serviceKey, plan.inputHash);
  const adopted = await staging.history.adopt(staging.rows, {
    runId,
    serviceKey: service.serviceKey,
    header,
    now: now().toISOString(),
    sendsNothing,
  });
  const state = RunState.open({
    ...(staging.writer ? { writer: staging.writer } : {}),
    db: staging.rows.db,
    runId,
    chargeMinor: chargeMinorOf(run.currencies),
    ...(deps.clock ? { now } : {}),
    ...adopted,
  });
  staging.kept = true;
  return state;
}

/**
 * The engine of a run, reporting progress and waits on `live.progress` (a spinner's line),
 * counted out of the `live.sending` payouts this run may send.
 */
export function newRunEngine(
  run: RunParts,
  service: ServiceConnection,
  state: RunState,
  live: { progress: Progress | undefined; sending: number },
): SendEngine {
  const { opts, plan, deps, output } = run;
  const clock = deps.clock ?? systemClock;
  const began = clock.now();
  const line = new SendingLine(live.progress, live.sending, () => ({
    inFlight: engine.pace.inFlight,
    aside: engine.aside.count,
    rate: (n) => Math.round((n * 1000) / Math.max(1, clock.now() - began)),
  }));
  const engine: SendEngine = new SendEngine(
    {
      client: service.client,
      journal: state,
      outcomes: state.outcomes,
      interrupt: deps.interrupt,
      finishNow: deps.finishNow,
      interactive: output.interactive,
      warn: (m) => output.warn(m),
      progress: (d) => line.advance(d.payouts),
      paceChanged: (limit, why) => output.debug(`pace: ${limit} requests at a time (${why})`),
      wait: (what, ms, text) => line.wait(what, ms, text),
      clock: deps.clock,
    },
    {
      chunkSize: opts.chunkSize,
      concurrency: concurrencyOf(opts),
      batchReference: plan.batchReference,
      webhookUrl: plan.webhookUrl,
      retry: deps.retry ?? DEFAULT_SEND_RETRY,
      quietMs: service.timing.quietMs,
    },
  );
  return engine;
}
