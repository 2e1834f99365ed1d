/** The check payout status endpoint (interface part 3), for a request whose credentials passed. */
import { type Answer, errorAnswer, okAnswer } from '../answer.js';
import type { SandboxContext } from '../context.js';
import { payoutRecord } from '../ledger.js';

/** Answers the record of one payout, read from the shared ledger as it is now. */
export async function handleStatus(ctx: SandboxContext, referenceId: string): Promise<Answer> {
  await ctx.ledger.refresh();
  const entry = ctx.ledger.get(referenceId);
  if (!entry) return errorAnswer(404, 'Payout not found');
  return okAnswer('Payout retrieved', payoutRecord(entry.payout, ctx.now()));
}
