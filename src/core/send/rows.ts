import type { RunState } from '../../state/index.js';
import type { SendEngine } from './engine.js';
import type { PriorState } from './resume.js';

/**
 * Hands the run's payouts to the engine in row order, from row `from` on, or records them as
 * sent earlier. Once the run stops, the rest are not sent, and those an earlier attempt left
 * in flight (not read back) are in doubt.
 */
export async function sendRows(
  state: RunState,
  prior: PriorState,
  engine: SendEngine,
  from = 0,
): Promise<void> {
  for (const { row, payout, hash } of state.payouts()) {
    if (row < from) continue;
    const known = prior.settled.get(row);
    if (known) {
      engine.addSentEarlier(payout, known.outcome);
      continue;
    }
    // Every row has an outcome, whatever stopped the run: those never reached were not sent.
    if (engine.stopping) {
      if (prior.inFlight.get(payout.reference_id)?.row === row) engine.inDoubt(payout);
      else engine.notReached(payout);
      continue;
    }
    engine.enqueue({ payout, hash });
    await engine.ready();
  }
}

/**
 * After an error thrown mid-run: no new request starts, those in flight settle, and every
 * row gets an outcome, so the results and --report still list them all.
 */
export async function windDown(
  error: unknown,
  run: { state: RunState; prior: PriorState; engine: SendEngine },
): Promise<void> {
  const { engine } = run;
  engine.fatal ??= error instanceof Error ? error : new Error(String(error));
  try {
    await engine.finish();
  } catch {
    // The error that stopped the run is the one reported.
  }
  await sendRows(run.state, run.prior, engine, engine.rowCount);
}
