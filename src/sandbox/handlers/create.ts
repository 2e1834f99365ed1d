/** The create payouts endpoint (interface part 2), for a request whose credentials passed. */
import { randomBytes } from 'node:crypto';
import { isHttpUrl } from '../../api/base-url.js';
import { payoutAmountTexts } from '../amount-text.js';
import { type Answer, errorAnswer, okAnswer } from '../answer.js';
import type { SandboxContext } from '../context.js';
import { type LedgerLine, payoutRecord, type StoredPayout } from '../ledger.js';
import {
  chargesMinor,
  checkPayout,
  DUPLICATE_MESSAGE,
  MAX_DESCRIPTION_CHARS,
  minorToNumber,
  type PayoutStatus,
  referenceOf,
  type ValidPayout,
} from '../payout-rules.js';
import { type TriggerRule, triggerFor, triggerMessage } from '../triggers.js';

/** A create result (interface 2.4), with the reason of a failure. */
interface CreateResult {
  reference_id: unknown;
  status: PayoutStatus;
  transaction_id: string | null;
  amount: number | null;
  currency: string | null;
  charges: number;
  message?: string;
}

/** A create request whose envelope passed the whole-request checks. */
interface CreateRequest {
  items: unknown[];
  webhookUrl?: string;
  batchReference?: string;
}

/** One request's payouts as they are judged, in order, inside the ledger's commit. */
interface Batch {
  isStored: (referenceId: string) => boolean;
  appliedHere: Set<string>;
  amountTexts: Map<number, string>;
  batchReference: string;
  createdMs: number;
  createdAt: string;
  pendingDelayMs: number;
  triggers: readonly TriggerRule[];
  lines: LedgerLine[];
  results: CreateResult[];
  stored: StoredPayout[];
}

/** A new transaction id: sbx_txn_ and 20 hex characters. */
export function newTransactionId(): string {
  return `sbx_txn_${randomBytes(10).toString('hex')}`;
}

/** A new batch reference, for requests that carry none. */
export function newBatchReference(): string {
  return `sbx_batch_${randomBytes(8).toString('hex')}`;
}

/** What the interface (2.1, 2.2) types as a string, though it may be left out. */
const OPTIONAL_STRINGS = {
  webhook_url: 'an http:// or https:// URL',
  batch_reference: 'a reference grouping the payouts',
} as const;

/**
 * The first field the request sets to null where the interface wants a string (left out, it
 * would be the account's default or none): the error text naming it, or undefined.
 */
function nullWhereString(req: Record<string, unknown>): string | undefined {
  for (const [field, what] of Object.entries(OPTIONAL_STRINGS)) {
    if (req[field] === null)
      return `${field} must be a string (${what}), not null: leave it out for none`;
  }
  const payouts = req.payouts as unknown[];
  const i = payouts.findIndex(
    (p) =>
      typeof p === 'object' && p !== null && (p as Record<string, unknown>).description === null,
  );
  if (i === -1) return undefined;
  return `payouts[${i}].description must be a string (at most ${MAX_DESCRIPTION_CHARS} characters), not null: leave it out for none`;
}

/** Checks the request as a whole: the answer refusing it, or its payouts and options. */
function readCreateRequest(raw: string, max: number | undefined): CreateRequest | Answer {
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    return errorAnswer(400, 'Invalid JSON body');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return errorAnswer(422, 'The request body must be a JSON object with a payouts array');
  }
  const req = body as Record<string, unknown>;
  if (req.payouts === undefined || req.payouts === null) {
    return errorAnswer(422, 'payouts is required: a non-empty array of payout objects');
  }
  if (!Array.isArray(req.payouts)) return errorAnswer(422, 'payouts must be an array');
  if (req.payouts.length === 0) return errorAnswer(422, 'payouts must not be empty');
  const refused = nullWhereString(req);
  if (refused) return errorAnswer(400, refused);
  const webhookUrl = req.webhook_url ?? undefined;
  if (webhookUrl !== undefined && (typeof webhookUrl !== 'string' || !isHttpUrl(webhookUrl))) {
    return errorAnswer(422, 'webhook_url must be an http:// or https:// URL');
  }
  const batchReference = req.batch_reference ?? undefined;
  if (batchReference !== undefined && typeof batchReference !== 'string') {
    return errorAnswer(422, 'batch_reference must be a string');
  }
  if (max !== undefined && req.payouts.length > max) {
    return errorAnswer(413, `Too many payouts in one request: at most ${max}`);
  }
  return { items: req.payouts, webhookUrl, batchReference };
}

/** When a payout a trigger makes change later reads its later status, and what that is; none: never. */
function laterChange(batch: Batch, rule: TriggerRule | undefined) {
  if (rule?.later === undefined) return {};
  const at = batch.createdMs + (rule.afterMs ?? batch.pendingDelayMs);
  return { settles_at: new Date(at).toISOString(), later_status: rule.later };
}

/** The stored form of a valid payout, with the status its recipient triggers, now and later. */
function storedPayout(batch: Batch, v: ValidPayout): StoredPayout {
  const rule = triggerFor(v.recipient, batch.triggers, v.reference_id);
  const status = rule?.status ?? 'success';
  const message = triggerMessage(rule);
  return {
    reference_id: v.reference_id,
    status,
    amount: v.amount,
    minor: v.minor.toString(),
    currency: v.currency,
    recipient: v.recipient,
    description: v.description,
    transaction_id: newTransactionId(),
    charges: chargesMinor(status, v.minor).toString(),
    created_at: batch.createdAt,
    ...laterChange(batch, rule),
    batch_reference: batch.batchReference,
    ...(message ? { message } : {}),
  };
}

/** Judges one payout of the request: refused as a duplicate or invalid, or stored. */
function planItem(batch: Batch, item: unknown, index: number): void {
  const o = (typeof item === 'object' && item !== null ? item : {}) as Record<string, unknown>;
  const echo = {
    reference_id: o.reference_id ?? null,
    amount: typeof o.amount === 'number' ? o.amount : null,
    currency: typeof o.currency === 'string' ? o.currency.toUpperCase() : null,
  };
  const failed = { ...echo, status: 'failed' as const, transaction_id: null, charges: 0 };
  const ref = referenceOf(item);
  if (ref !== undefined && (batch.isStored(ref) || batch.appliedHere.has(ref))) {
    batch.lines.push({ t: 'duplicate', reference_id: ref, at: batch.createdAt });
    batch.results.push({ ...failed, message: DUPLICATE_MESSAGE });
    return;
  }
  const checked = checkPayout(item, batch.amountTexts.get(index));
  if (!checked.ok) {
    batch.results.push({ ...failed, message: checked.reasons.join('; ') });
    return;
  }
  const v = checked.payout;
  const p = storedPayout(batch, v);
  batch.appliedHere.add(v.reference_id);
  batch.stored.push(p);
  batch.lines.push({ t: 'payout', ...p });
  batch.results.push({
    reference_id: p.reference_id,
    status: p.status,
    transaction_id: p.transaction_id,
    amount: p.amount,
    currency: p.currency,
    charges: minorToNumber(BigInt(p.charges), v.digits),
    ...(p.message ? { message: p.message } : {}),
  });
}

/** Judges and stores the payouts of a request in one ledger commit. */
async function applyPayouts(
  ctx: SandboxContext,
  items: unknown[],
  amountTexts: Map<number, string>,
  batchReference: string,
): Promise<{ results: CreateResult[]; stored: StoredPayout[] }> {
  return ctx.ledger.commit((isStored) => {
    const createdMs = ctx.now();
    const batch: Batch = {
      isStored,
      appliedHere: new Set<string>(),
      amountTexts,
      batchReference,
      createdMs,
      createdAt: new Date(createdMs).toISOString(),
      pendingDelayMs: ctx.pendingDelayMs,
      triggers: ctx.triggers,
      lines: [],
      results: [],
      stored: [],
    };
    items.forEach((item, index) => {
      planItem(batch, item, index);
    });
    return { lines: batch.lines, value: { results: batch.results, stored: batch.stored } };
  });
}

/** Sends the webhooks of freshly stored payouts, and arms those of their later changes. */
function notify(ctx: SandboxContext, stored: StoredPayout[], url: string | undefined): void {
  if (!url) return;
  for (const p of stored) {
    // As created: even with a zero delay, a payout is announced as answered first.
    ctx.webhooks.send(url, payoutRecord(p, Number.NEGATIVE_INFINITY));
    if (p.settles_at) {
      const settlesAt = Date.parse(p.settles_at);
      ctx.timers.later(Math.max(0, settlesAt - ctx.now()), () =>
        ctx.webhooks.send(url, payoutRecord(p, settlesAt)),
      );
    }
  }
}

/** Handles a create request; `cut` only changes the log line (the router drops the answer). */
export async function handleCreate(
  ctx: SandboxContext,
  raw: string,
  cut: boolean,
): Promise<Answer> {
  const req = readCreateRequest(raw, ctx.maxPayoutsPerRequest);
  if ('status' in req) return req;
  const amountTexts = payoutAmountTexts(raw);
  const batchReference = req.batchReference || newBatchReference();
  const { results, stored } = await applyPayouts(ctx, req.items, amountTexts, batchReference);
  notify(ctx, stored, req.webhookUrl ?? ctx.defaultWebhookUrl);
  const succeeded = results.filter((r) => r.status === 'success' || r.status === 'pending');
  const failed = results.length - succeeded.length;
  ctx.log(
    `created ${stored.length} of ${results.length} payouts (${succeeded.length} success or pending, ${failed} failed or canceled)${cut ? '; cutting the connection (fault)' : ''}`,
  );
  return okAnswer('Payouts processed', {
    success_count: succeeded.length,
    failed_count: failed,
    batch_reference: batchReference,
    results,
  });
}
