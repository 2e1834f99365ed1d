/** What the request handlers of one sandbox share: its state, its settings and its clock. */
import type { FaultCounter } from './faults.js';
import type { Ledger } from './ledger.js';
import type { Timers } from './timers.js';
import type { TriggerRule } from './triggers.js';
import type { WebhookSender } from './webhooks.js';

/** The shared context of one running sandbox, built once by startSandbox. */
export interface SandboxContext {
  ledger: Ledger;
  faults: FaultCounter;
  webhooks: WebhookSender;
  timers: Timers;
  now: () => number;
  log: (line: string) => void;
  /** Normalised: '' or '/merchant'. */
  prefix: string;
  /** How long a payout that changes later waits, when its trigger gives no delay. */
  pendingDelayMs: number;
  /** The user's triggers, then the built-in ones: the first that matches decides. */
  triggers: readonly TriggerRule[];
  latencyMs: number;
  maxPayoutsPerRequest?: number;
  defaultWebhookUrl?: string;
}
