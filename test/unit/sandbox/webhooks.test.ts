import { afterEach, describe, expect, it, vi } from 'vitest';
import { createPayouts, Fixture, getStatus, payout } from './helpers.js';

const fx = new Fixture();
afterEach(() => fx.cleanup());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Waits for a log line the sandbox writes after the receiver has answered: never a fixed time. */
const logged = (lines: string[], pattern: RegExp) =>
  vi.waitFor(
    () =>
      expect(
        lines.some((l) => pattern.test(l)),
        `no line ${pattern}`,
      ).toBe(true),
    {
      timeout: 20_000,
      interval: 10,
    },
  );
// biome-ignore lint/suspicious/noExplicitAny: webhook bodies are read field by field.
type Event = any;

describe('webhooks', () => {
  it('POSTs one event per stored payout to the request webhook_url, with the record', async () => {
    const hook = await fx.receiver();
    const sb = await fx.start();
    await createPayouts(sb.baseUrl, {
      payouts: [
        payout('w1', { description: 'd' }),
        payout('w2', { amount: 0 }),
        payout('w3', { recipient: 'x+failed' }),
      ],
      webhook_url: hook.url,
    });
    const events: Event[] = [await hook.next(), await hook.next()];
    events.sort((a, b) => (a.data.reference_id < b.data.reference_id ? -1 : 1));
    const record = (await getStatus(sb.baseUrl, 'w1')).body.data;
    expect(events[0]).toEqual({
      event: 'payout.success',
      event_id: expect.stringMatching(/^sbx_evt_[0-9a-f]{20}$/),
      sent_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
      data: record,
    });
    expect(events[1]).toMatchObject({
      event: 'payout.failed',
      data: { reference_id: 'w3', status: 'failed' },
    });
    // The invalid payout (w2) is no record and gets no event.
    await sleep(150);
    expect(hook.calls).toHaveLength(2);
  });

  it('uses the default webhook URL unless the request overrides it', async () => {
    const byDefault = await fx.receiver();
    const override = await fx.receiver();
    const sb = await fx.start({ defaultWebhookUrl: byDefault.url });
    await createPayouts(sb.baseUrl, { payouts: [payout('u1')] });
    expect(((await byDefault.next()) as Event).data.reference_id).toBe('u1');
    await createPayouts(sb.baseUrl, { payouts: [payout('u2')], webhook_url: override.url });
    expect(((await override.next()) as Event).data.reference_id).toBe('u2');
    await sleep(150);
    expect(byDefault.calls).toHaveLength(1);
  });

  it('sends nothing for duplicates', async () => {
    const hook = await fx.receiver();
    const sb = await fx.start({ defaultWebhookUrl: hook.url });
    await createPayouts(sb.baseUrl, { payouts: [payout('dd'), payout('dd')] });
    await createPayouts(sb.baseUrl, { payouts: [payout('dd')] });
    await hook.next();
    await sleep(150);
    expect(hook.calls).toHaveLength(1);
  });

  it('retries after a 500 with the same event id', async () => {
    const hook = await fx.receiver((n) => (n === 1 ? 500 : 200));
    const lines: string[] = [];
    const sb = await fx.start({ webhookRetryDelaysMs: [50, 50], log: (l) => lines.push(l) });
    await createPayouts(sb.baseUrl, { payouts: [payout('rt')], webhook_url: hook.url });
    const first = (await hook.next()) as Event;
    const second = (await hook.next()) as Event;
    expect(second.event_id).toBe(first.event_id);
    // The receiver answers before the sandbox logs the delivery; wait for the line, not a fixed time.
    await logged(lines, /webhook payout\.success rt .*: delivered/);
    expect(lines.some((l) => /rt to .*: HTTP 500; retrying in 50 ms/.test(l))).toBe(true);
  });

  it('gives up after the last retry and logs it', async () => {
    const hook = await fx.receiver(() => 503);
    const lines: string[] = [];
    const sb = await fx.start({ webhookRetryDelaysMs: [10, 10], log: (l) => lines.push(l) });
    await createPayouts(sb.baseUrl, { payouts: [payout('gu')], webhook_url: hook.url });
    for (let i = 0; i < 3; i++) await hook.next();
    // The line comes after the third answer: once it is there, no fourth attempt can follow.
    await logged(lines, /gu to .*: HTTP 503; gave up after 3 attempts/);
    expect(hook.calls).toHaveLength(3);
  });

  it('retries on a network error', async () => {
    const lines: string[] = [];
    const sb = await fx.start({ webhookRetryDelaysMs: [10], log: (l) => lines.push(l) });
    // Port 9 on loopback: nothing listens there, the connection is refused.
    await createPayouts(sb.baseUrl, {
      payouts: [payout('ne')],
      webhook_url: 'http://127.0.0.1:9/x',
    });
    await logged(lines, /ne to .*: ECONNREFUSED; gave up after 2 attempts/);
    expect(lines.some((l) => /ne to .*: ECONNREFUSED; retrying in 10 ms/.test(l))).toBe(true);
  });

  it('never delays the create answer, even for a receiver that holds its answer', async () => {
    let release = () => {};
    const hook = await fx.receiver(
      () => 200,
      new Promise<void>((r) => {
        release = r;
      }),
    );
    const sb = await fx.start();
    const r = await createPayouts(sb.baseUrl, {
      payouts: [payout('s1'), payout('s2')],
      webhook_url: hook.url,
    });
    expect(r.status).toBe(200);
    // Answered while no delivery had ended: the receiver still holds every one it got.
    expect(hook.ended()).toBe(0);
    await hook.next();
    release();
  });

  it('announces a pending payout, then its success when the delay passes', async () => {
    const hook = await fx.receiver();
    const sb = await fx.start({ pendingDelayMs: 100, defaultWebhookUrl: hook.url });
    await createPayouts(sb.baseUrl, { payouts: [payout('pw', { recipient: 'x+pending' })] });
    const pending = (await hook.next()) as Event;
    expect(pending).toMatchObject({ event: 'payout.pending', data: { status: 'pending' } });
    const success = (await hook.next()) as Event;
    expect(success).toMatchObject({ event: 'payout.success', data: { status: 'success' } });
    expect(Date.parse(success.data.updated_at) - Date.parse(success.data.created_at)).toBe(100);
    expect(success.event_id).not.toBe(pending.event_id);
  });

  it('announces a return: the success, then the failure when the delay passes', async () => {
    const hook = await fx.receiver();
    const sb = await fx.start({ pendingDelayMs: 100, defaultWebhookUrl: hook.url });
    await createPayouts(sb.baseUrl, { payouts: [payout('rw', { recipient: 'x+returned' })] });
    const success = (await hook.next()) as Event;
    expect(success).toMatchObject({ event: 'payout.success', data: { status: 'success' } });
    const failed = (await hook.next()) as Event;
    expect(failed).toMatchObject({ event: 'payout.failed', data: { status: 'failed' } });
    expect(Date.parse(failed.data.updated_at) - Date.parse(failed.data.created_at)).toBe(100);
  });

  it('close() cancels the pending -> success timer and in-flight deliveries', async () => {
    // A receiver that never answers: the delivery stays in flight until the sandbox drops it.
    const hook = await fx.receiver(() => 200, new Promise(() => {}));
    const sb = await fx.start({ pendingDelayMs: 100, defaultWebhookUrl: hook.url });
    await createPayouts(sb.baseUrl, { payouts: [payout('cx', { recipient: 'x+pending' })] });
    await hook.next();
    await sb.close();
    await hook.endedCount(1);
    await sleep(250);
    expect(hook.calls).toHaveLength(1);
  });
});
