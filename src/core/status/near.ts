import { errorMessage } from '../../errors.js';
import { displayText } from '../../output/display.js';
import type { Output } from '../../output/output.js';
import { type HeldReference, nearReferences } from '../../state/index.js';
import { type RunsSource, withRunReader } from '../runs/runs.js';

/** References not found looked up in the history at most: each is one scan of its service's runs. */
const MAX_NEAR_LOOKUPS = 20;

/** What a "not found" answer is told with: the service asked, and near references in the history. */
export interface NotFoundContext {
  /** The service asked, as a person knows it: its base URL, or "the sandbox". */
  service: string;
  /** By reference not found: the references of the history close to it. */
  near: Map<string, HeldReference[]>;
}

/**
 * Finds, for references the service did not find, the references this history holds for the
 * same service that differ only by case, `-`, `_` or spaces, or one character. The history is
 * a help here, never a reason to fail: when it cannot be read, nothing is suggested.
 */
export async function nearInHistory(
  refs: string[],
  serviceKey: string,
  from: RunsSource,
  output: Output,
): Promise<Map<string, HeldReference[]>> {
  const near = new Map<string, HeldReference[]>();
  if (!refs.length || refs.length > MAX_NEAR_LOOKUPS) return near;
  try {
    await withRunReader(from, output, async (read) => {
      for (const ref of refs) {
        const found = await nearReferences(read, serviceKey, ref);
        if (found.length) near.set(ref, found.slice(0, 3));
      }
    });
  } catch (error) {
    output.debug(`the history could not be read for "did you mean": ${errorMessage(error)}`);
  }
  return near;
}

/** "2026-11-24 14:02 UTC" of an ISO time. */
function when(at: string | null): string {
  return at ? ` on ${at.slice(0, 16).replace('T', ' ')} UTC` : '';
}

/** "did you mean DEC-0047 (sent by run 3f2a… on 2026-11-24 14:02 UTC)?", or '' when none is near. */
export function didYouMean(near: HeldReference[] | undefined): string {
  if (!near?.length) return '';
  const named = near.map(
    (h) => `${displayText(h.reference_id)} (sent by run ${h.run_id}${when(h.sent_at)})`,
  );
  return `did you mean ${named.join(' or ')}?`;
}

/** Why a reference was not found, for a person: the service asked, and any near reference. */
export function notFoundText(
  ref: string,
  ctx: NotFoundContext | undefined,
  red: (text: string) => string = (t) => t,
): string {
  const head = `${displayText(ref)}: ${red('not found')}`;
  if (!ctx) return head;
  const hint = didYouMean(ctx.near.get(ref));
  const base = `${head} at ${displayText(ctx.service)} (a reference_id is case-sensitive)`;
  return hint ? `${base}; ${hint}` : base;
}
