import type { CommandContext } from '../../context.js';
import { UsageError } from '../../errors.js';

/** The shared history and service a rule command is about; refused on a local history. */
export async function ruleTarget(ctx: CommandContext, flag: string | undefined, what: string) {
  const [{ stateUrlOf }, { loadSettings, serviceKeyOf }, { needsSharedHistory }] =
    await Promise.all([
      import('../state-url.js'),
      import('../../core/service.js'),
      import('../../core/approvals/common.js'),
    ]);
  const url = await stateUrlOf(ctx, flag);
  if (url === undefined) throw needsSharedHistory(what);
  const baseUrl = (await loadSettings(ctx)).baseUrl?.value;
  if (baseUrl === undefined) {
    throw new UsageError(
      `${what} is about one service: set its base URL (--base-url, PAYOUTS_BASE_URL or the profile)`,
    );
  }
  return { url, serviceKey: serviceKeyOf(baseUrl), service: baseUrl };
}

/** The --state-url option's help of every approvals command. */
export const STATE_URL_HELP =
  'the shared history, postgres://… (default: PAYOUTS_STATE_URL, else the profile)';
