import type { PayoutRecord } from '../../../src/api/types.js';
import type { PayoutReader } from '../../../src/core/status/lookup.js';
import { NotFoundError } from '../../../src/errors.js';

/** What the fake service answers for a reference: a status, "missing", or an error to throw. */
export type FakeAnswer = string | 'missing' | Error;

/**
 * A PayoutReader that answers from a script per reference (the last entry repeats), counts
 * calls, tracks requests in flight and can delay answers.
 */
export function fakeReader(script: Record<string, FakeAnswer[]>, delayMs = 0) {
  const calls = new Map<string, number>();
  let inFlight = 0;
  let maxInFlight = 0;
  const reader: PayoutReader = {
    async getPayout(ref: string, signal?: AbortSignal): Promise<PayoutRecord> {
      const n = calls.get(ref) ?? 0;
      calls.set(ref, n + 1);
      inFlight += 1;
      maxInFlight = Math.max(maxInFlight, inFlight);
      try {
        if (delayMs > 0) {
          await new Promise<void>((resolve, reject) => {
            const onAbort = () => {
              clearTimeout(t);
              reject(new Error('aborted'));
            };
            const t = setTimeout(() => {
              signal?.removeEventListener('abort', onAbort);
              resolve();
            }, delayMs);
            signal?.addEventListener('abort', onAbort, { once: true });
          });
        }
        const answers = script[ref] ?? ['missing'];
        const a = answers[Math.min(n, answers.length - 1)] as FakeAnswer;
        if (a instanceof Error) throw a;
        if (a === 'missing') throw new NotFoundError(ref);
        return {
          reference_id: ref,
          status: a,
          amount: 10.5,
          currency: 'USD',
          recipient: 'r@example.com',
          transaction_id: `tx-${ref}`,
          created_at: '2024-05-01T10:00:00Z',
          updated_at: '2024-05-01T10:05:00Z',
        };
      } finally {
        inFlight -= 1;
      }
    },
  };
  return { reader, calls, maxInFlight: () => maxInFlight };
}
