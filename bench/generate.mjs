// Generates a payout CSV for the benchmarks: reference_id,amount,currency,recipient,description.
// Deterministic (seeded), unique references, EUR/USD (2 decimals), JPY (whole) and BHD
// (3 decimals), e-mail / telephone / custom recipients, some quoted descriptions with commas
// and doubled quotes, some empty ones. The expected count and total per currency are
// computed exactly (BigInt minor units) while writing, so a benchmark can check the CLI's
// answer.
//
// Usage: node bench/generate.mjs ROWS FILE   (prints the expected totals as JSON)

import { once } from 'node:events';
import { createWriteStream } from 'node:fs';

/** Minor-unit digits of the generated currencies. */
export const DIGITS = { EUR: 2, USD: 2, JPY: 0, BHD: 3 };

/** A small seeded PRNG (mulberry32), so every run benchmarks the same file. */
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The reference of row i (1-based). */
export function referenceOf(i) {
  return `BENCH-${String(i).padStart(8, '0')}`;
}

/**
 * Writes `rows` payouts to `file`. Resolves to
 * { rows, bytes, totals: { CUR: { count, minor: bigint } } }.
 */
export async function generateCsv(rows, file, seed = 20261122) {
  const rand = prng(seed);
  const out = createWriteStream(file);
  const totals = {};
  for (const cur of Object.keys(DIGITS)) totals[cur] = { count: 0, minor: 0n };
  let bytes = 0;
  let buf = 'reference_id,amount,currency,recipient,description\n';
  for (let i = 1; i <= rows; i++) {
    const r = rand();
    const currency = r < 0.4 ? 'EUR' : r < 0.7 ? 'USD' : r < 0.85 ? 'JPY' : 'BHD';
    const digits = DIGITS[currency];
    // Whole part 1..99999 (JPY 1..9999999); then the minor digits, zero-padded.
    const whole = 1 + Math.floor(rand() * (currency === 'JPY' ? 9_999_999 : 99_999));
    let amount = String(whole);
    let minor = BigInt(whole) * 10n ** BigInt(digits);
    if (digits > 0) {
      const frac = Math.floor(rand() * 10 ** digits);
      amount += `.${String(frac).padStart(digits, '0')}`;
      minor += BigInt(frac);
    }
    const t = totals[currency];
    t.count++;
    t.minor += minor;

    const kind = i % 3;
    const recipient =
      kind === 0
        ? `payee${i}@example.com`
        : kind === 1
          ? `+49151${String(1_000_000 + (i % 9_000_000)).padStart(7, '0')}`
          : `ACCT-${i}`;
    let description;
    if (i % 7 === 0) description = '';
    else if (i % 10 === 0) description = `"Invoice ${i}, bench run"`;
    else if (i % 97 === 0) description = `"Payout ""${i}"" bonus"`;
    else description = `Invoice ${i}`;

    buf += `${referenceOf(i)},${amount},${currency},${recipient},${description}\n`;
    if (buf.length >= 1 << 16) {
      bytes += Buffer.byteLength(buf);
      if (!out.write(buf)) await once(out, 'drain');
      buf = '';
    }
  }
  bytes += Buffer.byteLength(buf);
  out.end(buf);
  await once(out, 'finish');
  return { rows, bytes, totals };
}

/** Formats BigInt minor units as a decimal with `digits` decimals. */
export function formatMinor(minor, digits) {
  if (digits === 0) return minor.toString();
  const s = minor.toString().padStart(digits + 1, '0');
  return `${s.slice(0, -digits)}.${s.slice(-digits)}`;
}

/** Parses a decimal text into BigInt minor units with `digits` decimals, or undefined. */
export function parseMinor(text, digits) {
  const m = /^(\d+)(?:\.(\d+))?$/.exec(String(text));
  if (!m) return undefined;
  const frac = (m[2] ?? '').replace(/0+$/, '');
  if (frac.length > digits) return undefined;
  return BigInt(m[1]) * 10n ** BigInt(digits) + BigInt(frac.padEnd(digits, '0') || '0');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rows = Number(process.argv[2] ?? 1000);
  const file = process.argv[3] ?? 'bench-payouts.csv';
  const info = await generateCsv(rows, file);
  const totals = {};
  for (const [cur, t] of Object.entries(info.totals)) {
    totals[cur] = { count: t.count, total: formatMinor(t.minor, DIGITS[cur]) };
  }
  process.stdout.write(`${JSON.stringify({ file, rows, bytes: info.bytes, totals }, null, 2)}\n`);
}
