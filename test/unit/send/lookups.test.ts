import { describe, expect, it } from 'vitest';
import { lookUp } from '../../../src/core/send/facts.js';
import type { Ask } from '../../../src/core/send/fates.js';
import { CredentialsError, NotFoundError } from '../../../src/errors.js';
import { FakeClock } from '../../helpers/main.js';
import { memoryOutput } from '../status/output-helper.js';

// The one lookup phase: every question of a decision asked at once, each reference once,
// saying what it looks up; a rejected secret stops it.

const payout = (ref: string) => ({
  reference_id: ref,
  amount: '1.00',
  currency: 'EUR',
  recipient: 'r@ex.com',
});
const ASKS: Ask[] = [
  { row: 0, ref: 'A', why: 'other-client', payout: payout('A') },
  { row: 1, ref: 'B', why: 'not-in-history', payout: payout('B') },
  { row: 2, ref: 'B-R1', why: 'not-in-history', payout: payout('B-R1') },
  // Two retry rows retrying one original, and a payout that is another row's original.
  { row: 2, ref: 'O', why: 'original' },
  { row: 3, ref: 'O', why: 'original' },
  { row: 4, ref: 'B', why: 'original' },
];

function service(answer: (ref: string) => Promise<unknown>) {
  const asked: string[] = [];
  const client = {
    getPayout: async (ref: string) => {
      asked.push(ref);
      return answer(ref) as never;
    },
  };
  return { asked, service: { client } as never };
}

describe('lookUp', () => {
  it('asks each reference once, and says what it looks up', async () => {
    const { output, stderr } = memoryOutput();
    const { asked, service: svc } = service(async (ref) => {
      if (ref === 'B') throw new NotFoundError('Payout not found');
      return { reference_id: ref, status: 'failed' };
    });
    const answers = await lookUp(ASKS, {
      service: svc,
      output,
      clock: new FakeClock(),
      interrupt: new AbortController().signal,
    });
    expect(asked.sort()).toEqual(['A', 'B', 'B-R1', 'O']);
    expect([...answers.keys()].sort()).toEqual(['A', 'B', 'B-R1', 'O']);
    expect(answers.get('B')?.kind).toBe('not_found');
    expect(stderr()).toBe(
      'Looking up 3 payouts at the service before sending…\nLooking up the 2 payouts the retry rows retry at the service before sending…\n',
    );
  });

  it('stops at a rejected secret', async () => {
    const { output } = memoryOutput();
    const { service: svc } = service(async () => {
      throw new CredentialsError('the service rejected the Client-Id or secret');
    });
    const ctx = {
      service: svc,
      output,
      clock: new FakeClock(),
      interrupt: new AbortController().signal,
    };
    await expect(lookUp(ASKS.slice(0, 1), ctx)).rejects.toBeInstanceOf(CredentialsError);
  });
});
