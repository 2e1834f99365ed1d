/** Identities of the state database: services, runs and payouts, as hashes. */
import { hash } from 'node:crypto';
import { serviceIdentity } from '../api/base-url.js';

/** The payout hash this version writes: SHA-256 of the canonical form (see payoutHash). */
export const HASH_VERSION = 2;

/** First 16 hex characters of the SHA-256 of a text. */
export function sha256Hex16(text: string): string {
  return hash('sha256', text, 'hex').slice(0, 16);
}

/** Identifies a service by its key (serviceKeyOf: its identity, or "sandbox") without revealing it. */
export function serviceId(serviceKey: string): string {
  return sha256Hex16(serviceKey);
}

/**
 * The id a run's `service` text (the base URL as given, or "sandbox") is recorded under: the
 * id of its identity, so every spelling of one service is one history.
 */
export function serviceIdOf(service: string): string {
  return serviceId(serviceIdentity(service));
}

/** The run id of an input sent to a service: the same files to the same service are the same run. */
export function runIdFor(serviceKey: string, inputHash: string): string {
  return sha256Hex16(`${serviceKey}\n${inputHash}`);
}

/** Decimal text reduced to its value, so "010.50" and "10.5" compare equal; other text is kept. */
export function canonicalDecimal(text: string): string {
  const t = text.trim();
  const m = /^(\d+)(?:\.(\d*))?$/.exec(t);
  if (!m) return t;
  const int = (m[1] ?? '').replace(/^0+(?=\d)/, '');
  const frac = (m[2] ?? '').replace(/0+$/, '');
  return frac ? `${int}.${frac}` : int;
}

/** The fields that make a payout "the same" across runs. */
export interface PayoutIdentity {
  reference_id: string;
  amount: string;
  currency: string;
  recipient: string;
}

/**
 * The canonical form of a payout: the reference's length keeps the fields apart whatever it
 * holds; amount and currency cannot hold "|", and the recipient comes last.
 */
export function canonicalPayout(p: PayoutIdentity): string {
  return `${p.reference_id.length}:${p.reference_id}|${canonicalDecimal(p.amount)}|${p.currency.trim().toUpperCase()}|${p.recipient}`;
}

/** The payout hash (HASH_VERSION): SHA-256 of the canonical form, 64 hex characters. */
export function payoutHash(p: PayoutIdentity): string {
  // The one-shot form: a Hash object per payout costs more than the digest itself.
  return hash('sha256', canonicalPayout(p), 'hex');
}

/** Whether a stored payout hash of version `version` is the hash of `p`. */
export function sameHash(stored: string, version: number, p: PayoutIdentity): boolean {
  return version === HASH_VERSION && stored === payoutHash(p);
}
