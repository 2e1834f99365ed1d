import { InternalError } from '../errors.js';
import type { CreateRequest, PayoutRequest } from './types.js';

const PLAIN_DECIMAL = /^\d+(\.\d+)?$/;

/** Serialises one payout, writing its amount text as the JSON number, digit for digit. */
export function serializePayout(p: PayoutRequest): string {
  if (!PLAIN_DECIMAL.test(p.amount)) {
    throw new InternalError(`amount ${JSON.stringify(p.amount)} is not a validated decimal`);
  }
  let out = `{"amount":${p.amount},"currency":${JSON.stringify(p.currency)},"recipient":${JSON.stringify(p.recipient)},"reference_id":${JSON.stringify(p.reference_id)}`;
  if (p.description !== undefined && p.description !== '') {
    out += `,"description":${JSON.stringify(p.description)}`;
  }
  return `${out}}`;
}

/**
 * Serialises a create request. JSON.stringify is not used for amounts because they must not
 * pass through a double on our side: "0.10" stays "0.10" and "1234567.89" stays exact.
 */
export function serializeCreateRequest(req: CreateRequest): string {
  let out = `{"payouts":[${req.payouts.map(serializePayout).join(',')}]`;
  if (req.webhook_url !== undefined) out += `,"webhook_url":${JSON.stringify(req.webhook_url)}`;
  if (req.batch_reference !== undefined) {
    out += `,"batch_reference":${JSON.stringify(req.batch_reference)}`;
  }
  return `${out}}`;
}
