/** One payout to create, with its amount as exact decimal text. */
export interface PayoutRequest {
  reference_id: string;
  /** Canonical decimal text; written into the body as a JSON number, unchanged. */
  amount: string;
  currency: string;
  recipient: string;
  description?: string;
}
