/** One per-payout result of the service, as the engine records it. */
export interface OutcomeResult {
  ref: string;
  status: string;
  transaction_id?: string;
  charges?: number;
  amount?: number;
  currency?: string;
  message?: string;
}
