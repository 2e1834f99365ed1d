import type { CurrencyTable } from '../../money/currencies.js';
import type { Output } from '../../output/output.js';
import type { ServiceConnection } from '../service.js';
import type { SendEngine } from './engine.js';
import type { SendOptions } from './options.js';
import type { RunPlan } from './plan.js';
import type { SendDeps } from './staging.js';

/** What the results of a send read of its run (SendRun in run.ts), so they need not import it. */
export interface RunView {
  readonly opts: SendOptions;
  readonly deps: SendDeps;
  readonly currencies: CurrencyTable;
  readonly plan: RunPlan;
  readonly output: Output;
  /** The approval that let the run go (docs/approvals.md), for its --json document. */
  readonly approvalDoc?: unknown;
  /** What its Approval: line said (notes.ts), for its --json document. */
  readonly approvalStatus?: unknown;
}

/** A run once its requests have settled, for its results. */
export interface Finished {
  service: ServiceConnection;
  engine: SendEngine;
  runId: string;
  /** An error thrown once the run had begun (the engine's own is `engine.fatal`). */
  thrown?: unknown;
}
