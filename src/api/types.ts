/** Wire types of the Payout Service interface (see ../shared/spec). */

import type { PayoutRequest } from '../domain/payout.js';

/** The payout, defined with the domain types (src/domain/). */
export type { PayoutRequest };

/** The body of a create request. */
export interface CreateRequest {
  payouts: PayoutRequest[];
  webhook_url?: string;
  batch_reference?: string;
}

/** One result of a create request, as far as the service sent it. */
export interface CreateResult {
  reference_id: string;
  status: string;
  transaction_id?: string;
  amount?: number;
  currency?: string;
  charges?: number;
  /** A reason the service gave for this payout, when it gave one. */
  message?: string;
}

/** The data of a create response. */
export interface CreateResponse {
  success_count: number;
  failed_count: number;
  batch_reference?: string;
  results: CreateResult[];
  /** The envelope's message texts. */
  messages: string[];
}

/** A payout as the status endpoint returns it. */
export interface PayoutRecord {
  reference_id: string;
  status: string;
  amount?: number;
  currency?: string;
  created_at?: string;
  updated_at?: string;
  transaction_id?: string;
  recipient?: string;
  description?: string;
  [field: string]: unknown;
}

/** A create answer as read, before anything is decided from it (see core/send/verdict.ts). */
export interface CreateAnswer {
  status: number;
  /** The data when it holds a results list, whatever the status and `success` say. */
  response?: CreateResponse;
  /** Describes an answer that is not a plain success with results. */
  error?: import('../errors.js').ApiError | import('../errors.js').CredentialsError;
  /** Retry-After, in milliseconds, when the service sent one. */
  retryAfterMs?: number;
}
