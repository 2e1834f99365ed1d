import { createHash } from 'node:crypto';
import { join } from 'node:path';

/** First 16 hex characters of the SHA-256 of a text. */
function sha256Hex16(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 16);
}

/** Identifies a service (base URL and client id, or "sandbox") without revealing it. */
export function serviceId(serviceKey: string): string {
  return sha256Hex16(serviceKey);
}

/** The run id of an input sent to a service: the same files to the same service are the same run. */
export function runIdFor(serviceKey: string, inputHash: string): string {
  return sha256Hex16(`${serviceKey}\n${inputHash}`);
}

/** Folder holding a service's journals and its send lock. */
export function serviceDirOf(stateDir: string, serviceKey: string): string {
  return join(journalsDirOf(stateDir), serviceId(serviceKey));
}

/** Folder holding the journals of every service. */
export function journalsDirOf(stateDir: string): string {
  return join(stateDir, 'journals');
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

/** cyrb53's mixing with both 32-bit lanes kept: writes the two halves of a 64-bit hash into `out`. */
export function hash64Lanes(text: string, out: Int32Array): void {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  out[0] = h1;
  out[1] = h2;
}

const lanes = new Int32Array(2);

/**
 * A fast 64-bit non-cryptographic hash as 16 hex chars. Payout hashes are only ever compared
 * for the same reference_id, so the 2^-64 chance of two different payouts agreeing is no
 * practical risk, and SHA-256 per row cost a fifth of a large run.
 */
export function fastHash64(text: string): string {
  hash64Lanes(text, lanes);
  return (
    (lanes[1]! >>> 0).toString(16).padStart(8, '0') +
    (lanes[0]! >>> 0).toString(16).padStart(8, '0')
  );
}

/** The running state of payoutHash's streaming form of hash64Lanes. */
let s1 = 0;
let s2 = 0;

/** Feeds text[from, to) into the running hash, exactly as if it were part of one long string. */
function feed(text: string, from = 0, to = text.length): void {
  let h1 = s1;
  let h2 = s2;
  for (let i = from; i < to; i++) {
    const ch = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  s1 = h1;
  s2 = h2;
}

/** Feeds canonicalDecimal(text) without building it. */
function feedCanonicalDecimal(text: string): void {
  const t = text.trim();
  const n = t.length;
  let dot = -1;
  let i = 0;
  for (; i < n; i++) {
    const c = t.charCodeAt(i);
    if (c === 46 && dot < 0 && i > 0) dot = i;
    else if (c < 48 || c > 57) break;
  }
  if (i < n || n === 0) {
    feed(t);
    return;
  }
  const intEnd = dot < 0 ? n : dot;
  let intStart = 0;
  while (intStart < intEnd - 1 && t.charCodeAt(intStart) === 48) intStart++;
  let fracEnd = n;
  if (dot >= 0) while (fracEnd > dot + 1 && t.charCodeAt(fracEnd - 1) === 48) fracEnd--;
  feed(t, intStart, intEnd);
  if (dot >= 0 && fracEnd > dot + 1) feed(t, dot, fracEnd);
}

/** Hash of what makes a payout "the same": reference_id, amount (value, so "10.5" == "10.50"), currency, recipient. 16 hex chars. */
export function payoutHash(p: {
  reference_id: string;
  amount: string;
  currency: string;
  recipient: string;
}): string {
  // The hash of `${ref.length}:${ref}|${canonicalDecimal(amount)}|${CURRENCY}|${recipient}`,
  // fed field by field: building that text (and the canonical amount) cost more than hashing.
  // The reference's length keeps the fields apart whatever it holds; amount and currency
  // cannot hold "|", and the recipient comes last.
  s1 = 0xdeadbeef;
  s2 = 0x41c6ce57;
  feed(String(p.reference_id.length));
  feed(':');
  feed(p.reference_id);
  feed('|');
  feedCanonicalDecimal(p.amount);
  feed('|');
  feedCurrency(p.currency);
  feed('|');
  feed(p.recipient);
  let h1 = s1;
  let h2 = s2;
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return hex32(h2) + hex32(h1);
}

/** Feeds currency.trim().toUpperCase(), without building it when the code is plain A-Z already. */
function feedCurrency(currency: string): void {
  for (let i = 0; i < currency.length; i++) {
    const c = currency.charCodeAt(i);
    if (c < 65 || c > 90) {
      feed(currency.trim().toUpperCase());
      return;
    }
  }
  feed(currency);
}

/** Two hex digits of every byte value. */
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** A 32-bit value as 8 hex digits (what toString(16).padStart(8, '0') gives, at less cost). */
function hex32(x: number): string {
  return HEX[x >>> 24]! + HEX[(x >>> 16) & 255]! + HEX[(x >>> 8) & 255]! + HEX[x & 255]!;
}

/** Whether a run id is safe as a file name (it never comes from outside, but a path must not escape). */
export function isValidRunId(runId: string): boolean {
  return /^[A-Za-z0-9_-]{1,64}$/.test(runId);
}
