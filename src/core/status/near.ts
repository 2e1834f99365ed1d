import type { HeldRef } from '../../domain/chain.js';
import { tailOf } from '../../domain/chain.js';
import { errorMessage } from '../../errors.js';
import { displayText } from '../../output/display.js';
import type { Output } from '../../output/output.js';
import {
  failureReasons,
  type HeldReference,
  heldAmong,
  nearReferences,
  retryLinks,
} from '../../state/index.js';
import { type RunsSource, withRunReader } from '../runs/reader.js';
import type { LookupOutcome } from './lookup.js';

/** References not found looked up in the history at most: each is one lookup of a few thousand. */
const MAX_NEAR_LOOKUPS = 20;

/** What a "not found" answer is told with: the service asked, and near references in the history. */
export interface NotFoundContext {
  /** The service asked, as a person knows it: its base URL, or "the sandbox". */
  service: string;
  /** By reference not found: the references of the history close to it. */
  near: Map<string, HeldReference[]>;
  /** By failed or canceled reference: the last retry of its chain, when one retried it. */
  retried?: Map<string, HeldRef>;
  /** By failed or canceled reference: the reason the service gave, as the history holds it. */
  reasons?: Map<string, string>;
  /** The service's answer about each retry of `retried`, by the retry's reference (chains.ts). */
  retries?: Map<string, LookupOutcome>;
  /**
   * Of the failed or canceled references, those this history sent (undefined: it could not
   * be read); a retry of any other, sent from another machine or folder, cannot be seen here.
   */
  held?: Set<string>;
  /** Where this history is, for a person: its state.db, or the shared history's URL. */
  where?: string;
}

/** Failed payouts looked up in the history at most, for their reasons and retries. */
const MAX_FAILED_LOOKUPS = 5_000;

/**
 * What the history adds to a status of failed or canceled payouts: the reason the service
 * gave when it failed them, and the retry that took each on (a payout's state is its
 * chain's). As with near references, a history that cannot be read adds nothing.
 */
export async function failedInHistory(
  refs: string[],
  serviceKey: string,
  from: RunsSource,
  output: Output,
): Promise<Pick<NotFoundContext, 'retried' | 'reasons' | 'held'>> {
  const retried = new Map<string, HeldRef>();
  let reasons = new Map<string, string>();
  if (!refs.length || refs.length > MAX_FAILED_LOOKUPS) return { retried, reasons };
  // No state.db at all: this history sent none of them.
  let held: Set<string> | undefined = new Set();
  try {
    await withRunReader(from, output, async (read) => {
      held = await heldAmong(read, serviceKey, refs);
      reasons = await failureReasons(read, serviceKey, refs);
      const links = await retryLinks(read, serviceKey, refs);
      for (const ref of refs) {
        const tail = tailOf(links, ref);
        if (tail) retried.set(ref, tail);
      }
    });
  } catch (error) {
    held = undefined;
    output.debug(`the history could not be read for retries: ${errorMessage(error)}`);
  }
  return { retried, reasons, ...(held ? { held } : {}) };
}

/** How close a near reference is: the same but for case first, then loosely the same, then the rest. */
function closeness(ref: string, near: string): number {
  if (near.toLowerCase() === ref.toLowerCase()) return 0;
  return near.toLowerCase().replace(/[\s_-]+/g, '') === ref.toLowerCase().replace(/[\s_-]+/g, '')
    ? 1
    : 2;
}

/**
 * Finds, for references the service did not find, the references this history holds for the
 * same service one edit (a character added, dropped or changed) or a case change away
 * (src/state/near.ts). The history is a help here, never a reason to fail: when it cannot be
 * read, nothing is suggested.
 */
export async function nearInHistory(
  refs: string[],
  serviceKey: string,
  from: RunsSource,
  output: Output,
): Promise<Map<string, HeldReference[]>> {
  const near = new Map<string, HeldReference[]>();
  if (!refs.length || refs.length > MAX_NEAR_LOOKUPS) return near;
  const dialect = from.stateUrl ? 'pg' : 'sqlite';
  try {
    await withRunReader(from, output, async (read) => {
      for (const ref of refs) {
        const found = await nearReferences(read, dialect, serviceKey, ref);
        // Stable: of equally close references, the most recent stays first.
        found.sort((a, b) => closeness(ref, a.reference_id) - closeness(ref, b.reference_id));
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

/**
 * "did you mean DEC-0047 or DEC-0046 (sent by run 3f2a… on 2026-11-24 14:02 UTC)?", each run
 * named once, after the last of its references; '' when none is near.
 */
export function didYouMean(near: HeldReference[] | undefined): string {
  if (!near?.length) return '';
  const named: string[] = [];
  near.forEach((h, i) => {
    const next = near[i + 1];
    const sameRunNext = next !== undefined && next.run_id === h.run_id;
    const run = sameRunNext ? '' : ` (sent by run ${h.run_id}${when(h.sent_at)})`;
    named.push(`${displayText(h.reference_id)}${run}`);
  });
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
