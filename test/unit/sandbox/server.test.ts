import { afterEach, describe, expect, it } from 'vitest';
import { UsageError } from '../../../src/errors.js';
import { parseFaultRule, readSandboxLedger, startSandbox } from '../../../src/sandbox/index.js';
import { AUTH, call, createPayouts, Fixture, getStatus, payout } from './helpers.js';

const fx = new Fixture();
afterEach(() => fx.cleanup());

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe('authentication', () => {
  it.each([
    ['no headers', {}],
    ['a wrong secret', { ...AUTH, 'Client-Secret': 'nope' }],
    ['a wrong id', { ...AUTH, 'Client-Id': 'someone' }],
    ['only the id', { 'Client-Id': AUTH['Client-Id'] }],
  ])('answers 401 to %s, on both endpoints', async (_what, headers) => {
    const state = fx.state();
    const sb = await fx.start({ stateDir: state });
    const create = await createPayouts(sb.baseUrl, { payouts: [payout('r1')] }, headers);
    const status = await getStatus(sb.baseUrl, 'r1', headers);
    for (const r of [create, status]) {
      expect(r.status).toBe(401);
      expect(r.body).toEqual({ success: false, message: ['Invalid API credentials'], data: [] });
    }
    expect((await readSandboxLedger(state)).size).toBe(0);
    expect((await getStatus(sb.baseUrl, 'r1')).status).toBe(404);
  });
});

describe('create payouts', () => {
  it('answers the envelope with one result per payout', async () => {
    const sb = await fx.start();
    const r = await createPayouts(sb.baseUrl, {
      payouts: [payout('r1', { amount: 100, description: 'rent' })],
      batch_reference: 'batch-7',
    });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    expect(r.body).toEqual({
      success: true,
      message: ['Payouts processed'],
      data: {
        success_count: 1,
        failed_count: 0,
        batch_reference: 'batch-7',
        results: [
          {
            reference_id: 'r1',
            status: 'success',
            transaction_id: expect.stringMatching(/^sbx_txn_[0-9a-f]{20}$/),
            amount: 100,
            currency: 'USD',
            charges: 1,
          },
        ],
      },
    });
  });

  it('generates a batch reference when the request has none', async () => {
    const sb = await fx.start();
    const a = await createPayouts(sb.baseUrl, { payouts: [payout('r1')] });
    const b = await createPayouts(sb.baseUrl, { payouts: [payout('r2')] });
    expect(a.body.data.batch_reference).toMatch(/^sbx_batch_[0-9a-f]{16}$/);
    expect(a.body.data.batch_reference).not.toBe(b.body.data.batch_reference);
  });

  it('computes charges with the fee rule', async () => {
    const sb = await fx.start();
    const body =
      '{"payouts":[' +
      '{"amount":100.00,"currency":"USD","recipient":"a","reference_id":"f1"},' +
      '{"amount":0.40,"currency":"USD","recipient":"a","reference_id":"f2"},' +
      '{"amount":1000,"currency":"JPY","recipient":"a","reference_id":"f3"},' +
      '{"amount":10.000,"currency":"BHD","recipient":"a","reference_id":"f4"},' +
      '{"amount":1.50,"currency":"EUR","recipient":"a","reference_id":"f5"},' +
      '{"amount":250,"currency":"EUR","recipient":"a+pending","reference_id":"f6"},' +
      '{"amount":250,"currency":"EUR","recipient":"a+failed","reference_id":"f7"}]}';
    const r = await createPayouts(sb.baseUrl, body);
    const charges = r.body.data.results.map((x: { reference_id: string; charges: number }) => [
      x.reference_id,
      x.charges,
    ]);
    expect(charges).toEqual([
      ['f1', 1],
      ['f2', 0.01],
      ['f3', 10],
      ['f4', 0.1],
      ['f5', 0.02],
      ['f6', 2.5],
      ['f7', 0],
    ]);
  });

  it('echoes the amount as a number and the currency upper-case', async () => {
    const sb = await fx.start();
    const r = await createPayouts(
      sb.baseUrl,
      '{"payouts":[{"amount":12.50,"currency":"eur","recipient":"a","reference_id":"e1"}]}',
    );
    expect(r.body.data.results[0]).toMatchObject({
      amount: 12.5,
      currency: 'EUR',
      status: 'success',
    });
    expect((await getStatus(sb.baseUrl, 'e1')).body.data.currency).toBe('EUR');
  });
});

describe('per-payout validation', () => {
  const cases: Array<[string, string, RegExp]> = [
    [
      'a missing reference_id',
      '{"amount":1,"currency":"USD","recipient":"a"}',
      /^reference_id is required/,
    ],
    [
      'an empty reference_id',
      '{"amount":1,"currency":"USD","recipient":"a","reference_id":""}',
      /^reference_id is required/,
    ],
    [
      'a numeric reference_id',
      '{"amount":1,"currency":"USD","recipient":"a","reference_id":42}',
      /^reference_id is required/,
    ],
    [
      'an amount as a string',
      '{"amount":"1.00","currency":"USD","recipient":"a","reference_id":"v"}',
      /^amount must be a JSON number/,
    ],
    [
      'a zero amount',
      '{"amount":0,"currency":"USD","recipient":"a","reference_id":"v"}',
      /^amount must be greater than 0$/,
    ],
    [
      'a negative amount',
      '{"amount":-5,"currency":"USD","recipient":"a","reference_id":"v"}',
      /^amount must be greater than 0$/,
    ],
    [
      'too many decimals',
      '{"amount":10.001,"currency":"USD","recipient":"a","reference_id":"v"}',
      /^amount has 3 decimals but USD allows at most 2$/,
    ],
    [
      'decimals a double hides',
      '{"amount":0.1000000000000000001,"currency":"USD","recipient":"a","reference_id":"v"}',
      /^amount has 19 decimals/,
    ],
    [
      'decimals for JPY',
      '{"amount":100.5,"currency":"JPY","recipient":"a","reference_id":"v"}',
      /JPY has no minor unit/,
    ],
    [
      'an unknown currency',
      '{"amount":1,"currency":"XYZ","recipient":"a","reference_id":"v"}',
      /^currency "XYZ" is not an ISO 4217 code$/,
    ],
    [
      'a missing currency',
      '{"amount":1,"recipient":"a","reference_id":"v"}',
      /^currency is required/,
    ],
    [
      'a missing recipient',
      '{"amount":1,"currency":"USD","reference_id":"v"}',
      /^recipient is required/,
    ],
    [
      'an empty recipient',
      '{"amount":1,"currency":"USD","recipient":"","reference_id":"v"}',
      /^recipient is required/,
    ],
    [
      'a 256-character description',
      `{"amount":1,"currency":"USD","recipient":"a","reference_id":"v","description":"${'é'.repeat(256)}"}`,
      /^description is 256 characters long: at most 255 allowed$/,
    ],
    [
      'a description that is not a string',
      '{"amount":1,"currency":"USD","recipient":"a","reference_id":"v","description":5}',
      /^description must be a string$/,
    ],
    ['a payout that is not an object', '"v"', /^payout must be a JSON object$/],
  ];

  it.each(cases)('fails %s, stores nothing', async (_what, item, message) => {
    const state = fx.state();
    const sb = await fx.start({ stateDir: state });
    const r = await createPayouts(sb.baseUrl, `{"payouts":[${item}]}`);
    expect(r.status).toBe(200);
    expect(r.body.success).toBe(true);
    expect(r.body.data.success_count).toBe(0);
    expect(r.body.data.failed_count).toBe(1);
    const result = r.body.data.results[0];
    expect(result).toMatchObject({ status: 'failed', transaction_id: null, charges: 0 });
    expect(result.message).toMatch(message);
    expect((await readSandboxLedger(state)).size).toBe(0);
    expect((await getStatus(sb.baseUrl, 'v')).body.message).toEqual(['Payout not found']);
  });

  it('accepts 255 characters of astral code points and exact decimals', async () => {
    const sb = await fx.start();
    const r = await createPayouts(
      sb.baseUrl,
      `{"payouts":[{"amount":10.000,"currency":"BHD","recipient":"a","reference_id":"ok1","description":"${'😀'.repeat(255)}"},{"amount":1.10,"currency":"USD","recipient":"a","reference_id":"ok2"},{"amount":1e2,"currency":"JPY","recipient":"a","reference_id":"ok3"}]}`,
    );
    expect(r.body.data.results.map((x: { status: string }) => x.status)).toEqual([
      'success',
      'success',
      'success',
    ]);
    expect((await getStatus(sb.baseUrl, 'ok1')).body.data.description).toBe('😀'.repeat(255));
  });

  it('keeps the valid payouts of a request with invalid ones, and counts both', async () => {
    const sb = await fx.start();
    const r = await createPayouts(sb.baseUrl, {
      payouts: [payout('m1'), payout('m2', { amount: 0 }), payout('m3')],
    });
    expect(r.body.data).toMatchObject({ success_count: 2, failed_count: 1 });
    expect(r.body.data.results.map((x: { reference_id: string }) => x.reference_id)).toEqual([
      'm1',
      'm2',
      'm3',
    ]);
    expect((await getStatus(sb.baseUrl, 'm3')).status).toBe(200);
  });
});

describe('whole-request problems', () => {
  it.each([
    ['unparsable JSON', '{"payouts":[', 400, 'Invalid JSON body'],
    ['an empty body', '', 400, 'Invalid JSON body'],
    [
      'a body that is not an object',
      '[1]',
      422,
      'The request body must be a JSON object with a payouts array',
    ],
    ['missing payouts', '{}', 422, 'payouts is required: a non-empty array of payout objects'],
    ['payouts not an array', '{"payouts":{"a":1}}', 422, 'payouts must be an array'],
    ['empty payouts', '{"payouts":[]}', 422, 'payouts must not be empty'],
    [
      'a bad webhook_url',
      '{"payouts":[{"amount":1,"currency":"USD","recipient":"a","reference_id":"w"}],"webhook_url":"ftp://x"}',
      422,
      'webhook_url must be an http:// or https:// URL',
    ],
    [
      'a batch_reference that is not a string',
      '{"payouts":[{"amount":1,"currency":"USD","recipient":"a","reference_id":"w"}],"batch_reference":7}',
      422,
      'batch_reference must be a string',
    ],
    [
      'a null webhook_url',
      '{"payouts":[{"amount":1,"currency":"USD","recipient":"a","reference_id":"w"}],"webhook_url":null}',
      400,
      'webhook_url must be a string (an http:// or https:// URL), not null: leave it out for none',
    ],
    [
      'a null batch_reference',
      '{"payouts":[{"amount":1,"currency":"USD","recipient":"a","reference_id":"w"}],"batch_reference":null}',
      400,
      'batch_reference must be a string (a reference grouping the payouts), not null: leave it out for none',
    ],
    [
      'a null description',
      '{"payouts":[{"amount":1,"currency":"USD","recipient":"a","reference_id":"w"},{"amount":1,"currency":"USD","recipient":"a","reference_id":"x","description":null}]}',
      400,
      'payouts[1].description must be a string (at most 255 characters), not null: leave it out for none',
    ],
  ])('answers %s with an error envelope', async (_what, body, status, message) => {
    const state = fx.state();
    const sb = await fx.start({ stateDir: state });
    const r = await createPayouts(sb.baseUrl, body);
    expect(r.status).toBe(status);
    expect(r.body).toEqual({ success: false, message: [message], data: [] });
    expect((await readSandboxLedger(state)).size).toBe(0);
  });

  it('refuses more payouts than maxPayoutsPerRequest with 413, applying none', async () => {
    const state = fx.state();
    const sb = await fx.start({ stateDir: state, maxPayoutsPerRequest: 2 });
    const r = await createPayouts(sb.baseUrl, { payouts: [payout('a'), payout('b'), payout('c')] });
    expect(r.status).toBe(413);
    expect(r.body).toEqual({
      success: false,
      message: ['Too many payouts in one request: at most 2'],
      data: [],
    });
    expect((await readSandboxLedger(state)).size).toBe(0);
    const ok = await createPayouts(sb.baseUrl, { payouts: [payout('a'), payout('b')] });
    expect(ok.body.data.success_count).toBe(2);
  });
});

describe('unique reference_id', () => {
  it('fails the second use within one request without applying it again', async () => {
    const state = fx.state();
    const sb = await fx.start({ stateDir: state });
    const r = await createPayouts(sb.baseUrl, {
      payouts: [payout('d1', { amount: 5 }), payout('d1', { amount: 7 })],
    });
    expect(r.body.data).toMatchObject({ success_count: 1, failed_count: 1 });
    expect(r.body.data.results[1]).toEqual({
      reference_id: 'd1',
      status: 'failed',
      transaction_id: null,
      amount: 7,
      currency: 'USD',
      charges: 0,
      message: 'Duplicate reference_id: already used',
    });
    expect((await readSandboxLedger(state)).get('d1')).toMatchObject({
      applied: 1,
      duplicateAttempts: 1,
      amount: '5',
    });
  });

  it('judges a repeat after an invalid first use on its own', async () => {
    const sb = await fx.start();
    const r = await createPayouts(sb.baseUrl, {
      payouts: [payout('d2', { amount: 0 }), payout('d2')],
    });
    expect(r.body.data.results.map((x: { status: string }) => x.status)).toEqual([
      'failed',
      'success',
    ]);
  });

  it('fails a reference used by an earlier request', async () => {
    const state = fx.state();
    const sb = await fx.start({ stateDir: state });
    const first = await createPayouts(sb.baseUrl, {
      payouts: [payout('d3', { recipient: 'x+failed' })],
    });
    expect(first.body.data.results[0].status).toBe('failed');
    const again = await createPayouts(sb.baseUrl, { payouts: [payout('d3')] });
    expect(again.body.data.results[0].message).toBe('Duplicate reference_id: already used');
    const record = await getStatus(sb.baseUrl, 'd3');
    expect(record.body.data.transaction_id).toBe(first.body.data.results[0].transaction_id);
    expect((await readSandboxLedger(state)).get('d3')).toMatchObject({
      applied: 1,
      duplicateAttempts: 1,
    });
  });

  it('fails a reference stored by another sandbox sharing the state folder', async () => {
    const state = fx.state();
    const a = await fx.start({ stateDir: state });
    const b = await fx.start({ stateDir: state });
    await createPayouts(a.baseUrl, { payouts: [payout('shared')] });
    const r = await createPayouts(b.baseUrl, { payouts: [payout('shared')] });
    expect(r.body.data.results[0].message).toBe('Duplicate reference_id: already used');
    expect((await getStatus(b.baseUrl, 'shared')).body.data.status).toBe('success');
  });

  it('never applies one reference twice under concurrent creates from two instances', async () => {
    const state = fx.state();
    const a = await fx.start({ stateDir: state });
    const b = await fx.start({ stateDir: state });
    const refs = Array.from({ length: 30 }, (_, i) => `c${i}`);
    const requests = [];
    for (let round = 0; round < 6; round++) {
      const base = round % 2 === 0 ? a.baseUrl : b.baseUrl;
      // Each request carries the same 30 references in a different order.
      const order = refs.map((_, i) => refs[(i + round * 7) % refs.length] as string);
      requests.push(createPayouts(base, { payouts: order.map((r) => payout(r)) }));
    }
    const replies = await Promise.all(requests);
    const wins = new Map<string, number>();
    for (const reply of replies) {
      for (const r of reply.body.data.results) {
        if (r.status === 'success') wins.set(r.reference_id, (wins.get(r.reference_id) ?? 0) + 1);
        else expect(r.message).toBe('Duplicate reference_id: already used');
      }
    }
    expect([...wins.values()].every((n) => n === 1)).toBe(true);
    expect(wins.size).toBe(30);
    const ledger = await readSandboxLedger(state);
    for (const ref of refs)
      expect(ledger.get(ref)).toMatchObject({ applied: 1, duplicateAttempts: 5 });
  });
});

describe('status triggers', () => {
  it('stores failed and canceled payouts with a message and no charges', async () => {
    const sb = await fx.start();
    const r = await createPayouts(sb.baseUrl, {
      payouts: [
        payout('t1', { recipient: 'Bob+FAILED@example.com' }),
        payout('t2', { recipient: '+15550100+canceled' }),
        payout('t3', { recipient: 'carol+pending@example.com', amount: 100 }),
      ],
    });
    expect(r.body.data).toMatchObject({ success_count: 1, failed_count: 2 });
    const [t1, t2, t3] = r.body.data.results;
    expect(t1).toMatchObject({
      status: 'failed',
      charges: 0,
      message: 'Sandbox trigger: recipient asked for failed',
      transaction_id: expect.stringMatching(/^sbx_txn_/),
    });
    expect(t2).toMatchObject({
      status: 'canceled',
      charges: 0,
      message: 'Sandbox trigger: recipient asked for canceled',
    });
    expect(t3).toMatchObject({ status: 'pending', charges: 1 });
    expect((await getStatus(sb.baseUrl, 't1')).body.data.status).toBe('failed');
    expect((await getStatus(sb.baseUrl, 't2')).body.data.status).toBe('canceled');
    expect((await getStatus(sb.baseUrl, 't3')).body.data.status).toBe('pending');
  });

  it('reads a pending payout back as success once the delay has passed', async () => {
    let clock = Date.parse('2025-03-01T10:00:00.000Z');
    const sb = await fx.start({ pendingDelayMs: 5000, now: () => clock });
    await createPayouts(sb.baseUrl, { payouts: [payout('p1', { recipient: 'x+pending' })] });
    clock += 4999;
    const before = await getStatus(sb.baseUrl, 'p1');
    expect(before.body.data).toMatchObject({
      status: 'pending',
      created_at: '2025-03-01T10:00:00.000Z',
      updated_at: '2025-03-01T10:00:00.000Z',
    });
    clock += 1;
    const after = await getStatus(sb.baseUrl, 'p1');
    expect(after.body.data).toMatchObject({
      status: 'success',
      created_at: '2025-03-01T10:00:00.000Z',
      updated_at: '2025-03-01T10:00:05.000Z',
    });
  });

  it('settles pending payouts with real time too', async () => {
    // A second is wide enough to read it pending on a busy machine; then it settles by itself.
    const sb = await fx.start({ pendingDelayMs: 1000 });
    await createPayouts(sb.baseUrl, { payouts: [payout('p2', { recipient: 'x+pending' })] });
    expect((await getStatus(sb.baseUrl, 'p2')).body.data.status).toBe('pending');
    let status = 'pending';
    for (let i = 0; i < 100 && status === 'pending'; i++) {
      await new Promise((r) => setTimeout(r, 50));
      status = (await getStatus(sb.baseUrl, 'p2')).body.data.status;
    }
    expect(status).toBe('success');
  });

  it('answers a late failure pending, then reads it failed once the delay has passed', async () => {
    let clock = Date.parse('2025-03-01T10:00:00.000Z');
    const sb = await fx.start({ pendingDelayMs: 5000, now: () => clock });
    const r = await createPayouts(sb.baseUrl, {
      payouts: [payout('lf', { recipient: 'x+late-failed', amount: 100 })],
    });
    expect(r.body.data).toMatchObject({ success_count: 1, failed_count: 0 });
    expect(r.body.data.results[0]).toMatchObject({
      status: 'pending',
      charges: 1,
      message: 'Sandbox trigger: recipient asked for pending, then failed',
    });
    clock += 4999;
    expect((await getStatus(sb.baseUrl, 'lf')).body.data.status).toBe('pending');
    clock += 1;
    expect((await getStatus(sb.baseUrl, 'lf')).body.data).toMatchObject({
      status: 'failed',
      updated_at: '2025-03-01T10:00:05.000Z',
    });
  });

  it('answers a return success, then reads it failed or canceled', async () => {
    let clock = Date.parse('2025-03-01T10:00:00.000Z');
    const sb = await fx.start({ pendingDelayMs: 60_000, now: () => clock });
    const r = await createPayouts(sb.baseUrl, {
      payouts: [
        payout('rt', { recipient: 'bo+returned@example.com' }),
        payout('rc', { recipient: 'bo+recalled@example.com' }),
      ],
    });
    expect(r.body.data.results.map((x: { status: string }) => x.status)).toEqual([
      'success',
      'success',
    ]);
    expect(r.body.data.results[0].message).toBeUndefined();
    expect((await getStatus(sb.baseUrl, 'rt')).body.data.status).toBe('success');
    clock += 60_000;
    expect((await getStatus(sb.baseUrl, 'rt')).body.data).toMatchObject({
      status: 'failed',
      updated_at: '2025-03-01T10:01:00.000Z',
    });
    expect((await getStatus(sb.baseUrl, 'rc')).body.data.status).toBe('canceled');
  });

  it("applies the user's triggers first, with their own delays", async () => {
    let clock = Date.parse('2025-03-01T10:00:00.000Z');
    const sb = await fx.start({
      now: () => clock,
      triggers: [
        { match: '@bank.example', status: 'success', later: 'failed', afterMs: 10 },
        // Overrides the built-in +pending, whose delay would be 30 s.
        { match: '+pending', status: 'pending', later: 'canceled', afterMs: 20 },
      ],
    });
    await createPayouts(sb.baseUrl, {
      payouts: [
        payout('u1', { recipient: 'ana@bank.example' }),
        payout('u2', { recipient: 'x+pending' }),
        payout('u3', { recipient: 'x+failed@bank.example' }),
      ],
    });
    const status = async (ref: string) => (await getStatus(sb.baseUrl, ref)).body.data.status;
    expect([await status('u1'), await status('u2'), await status('u3')]).toEqual([
      'success',
      'pending',
      'success',
    ]);
    clock += 20;
    expect([await status('u1'), await status('u2'), await status('u3')]).toEqual([
      'failed',
      'canceled',
      'failed',
    ]);
  });

  it('reads what a payout became from the ledger, in another process started later', async () => {
    let clock = Date.parse('2025-03-01T10:00:00.000Z');
    const stateDir = fx.state();
    const first = await fx.start({ stateDir, pendingDelayMs: 1000, now: () => clock });
    await createPayouts(first.baseUrl, { payouts: [payout('x1', { recipient: 'x+late-failed' })] });
    await first.close();
    // Another delay in the reader: the change was fixed when the payout was created.
    const second = await fx.start({ stateDir, pendingDelayMs: 3_600_000, now: () => clock });
    expect((await getStatus(second.baseUrl, 'x1')).body.data.status).toBe('pending');
    clock += 1000;
    expect((await getStatus(second.baseUrl, 'x1')).body.data.status).toBe('failed');
  });
});

describe('check payout status', () => {
  it('answers the payout record', async () => {
    const sb = await fx.start();
    const created = await createPayouts(sb.baseUrl, {
      payouts: [
        payout('s1', {
          amount: 12.34,
          currency: 'EUR',
          recipient: '+4915550100',
          description: 'Invoice 7',
        }),
      ],
    });
    const r = await getStatus(sb.baseUrl, 's1');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      success: true,
      message: ['Payout retrieved'],
      data: {
        reference_id: 's1',
        status: 'success',
        amount: 12.34,
        currency: 'EUR',
        created_at: expect.stringMatching(ISO),
        updated_at: expect.stringMatching(ISO),
        transaction_id: created.body.data.results[0].transaction_id,
        recipient: '+4915550100',
        description: 'Invoice 7',
      },
    });
  });

  it('answers description "" when none was given, and decodes the path segment', async () => {
    const sb = await fx.start();
    const ref = 'inv/2025 #7?é';
    await createPayouts(sb.baseUrl, { payouts: [payout(ref)] });
    const r = await getStatus(sb.baseUrl, ref);
    expect(r.body.data).toMatchObject({ reference_id: ref, description: '' });
  });

  it('answers 404 "Payout not found" for an unknown reference', async () => {
    const sb = await fx.start();
    const r = await getStatus(sb.baseUrl, 'nobody');
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ success: false, message: ['Payout not found'], data: [] });
  });

  it('answers 400 for bad percent-encoding', async () => {
    const sb = await fx.start();
    const r = await call(sb.baseUrl, 'GET', '/api/v1/payouts/%E0%A4%A');
    expect(r.status).toBe(400);
    expect(r.body.success).toBe(false);
  });
});

describe('routing', () => {
  it('answers 404 "Not found" to unknown routes and 405 to wrong methods', async () => {
    const sb = await fx.start();
    for (const path of [
      '/',
      '/api/v1',
      '/api/v2/payouts',
      '/api/v1/payouts/',
      '/api/v1/payouts/a/b',
    ]) {
      const r = await call(sb.baseUrl, 'GET', path);
      expect(r.status, path).toBe(404);
      expect(r.body).toEqual({ success: false, message: ['Not found'], data: [] });
    }
    const get = await call(sb.baseUrl, 'GET', '/api/v1/payouts');
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    const post = await call(sb.baseUrl, 'POST', '/api/v1/payouts/x', {});
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET');
    expect(post.body.success).toBe(false);
  });

  it('serves under a path prefix, and only there', async () => {
    const sb = await fx.start({ pathPrefix: '/merchant/' });
    expect(sb.baseUrl).toBe(`http://127.0.0.1:${sb.port}/merchant`);
    const r = await createPayouts(sb.baseUrl, { payouts: [payout('pp')] });
    expect(r.body.data.success_count).toBe(1);
    const root = `http://127.0.0.1:${sb.port}`;
    expect((await getStatus(root, 'pp')).status).toBe(404);
    expect((await getStatus(`${root}/merchantx`, 'pp')).status).toBe(404);
    expect((await getStatus(sb.baseUrl, 'pp')).status).toBe(200);
  });

  it('ignores a query string', async () => {
    const sb = await fx.start();
    await createPayouts(sb.baseUrl, { payouts: [payout('q1')] });
    expect((await call(sb.baseUrl, 'GET', '/api/v1/payouts/q1?x=1')).status).toBe(200);
  });
});

describe('faults', () => {
  it('answers 500 to the nth create, applying nothing', async () => {
    const state = fx.state();
    const sb = await fx.start({ stateDir: state, faults: [parseFaultRule('create:2:500')] });
    expect((await createPayouts(sb.baseUrl, { payouts: [payout('f1')] })).status).toBe(200);
    const r = await createPayouts(sb.baseUrl, { payouts: [payout('f2')] });
    expect(r.status).toBe(500);
    expect(r.body).toEqual({ success: false, message: ['Internal server error'], data: [] });
    expect((await readSandboxLedger(state)).has('f2')).toBe(false);
    expect(
      (await createPayouts(sb.baseUrl, { payouts: [payout('f2')] })).body.data.success_count,
    ).toBe(1);
    expect(sb.requestCounts()).toEqual({ create: 3, status: 0 });
  });

  it('answers 429 with Retry-After, applying nothing', async () => {
    const state = fx.state();
    const sb = await fx.start({
      stateDir: state,
      faults: [parseFaultRule('create:1:429:5'), parseFaultRule('status:1:429')],
    });
    const r = await createPayouts(sb.baseUrl, { payouts: [payout('g1')] });
    expect(r.status).toBe(429);
    expect(r.headers.get('retry-after')).toBe('5');
    expect(r.body.message).toEqual(['Too many requests']);
    const s = await getStatus(sb.baseUrl, 'g1');
    expect(s.status).toBe(429);
    expect(s.headers.get('retry-after')).toBe('1');
    expect((await readSandboxLedger(state)).size).toBe(0);
  });

  it('answers 413 to the nth request of any endpoint', async () => {
    const state = fx.state();
    const sb = await fx.start({ stateDir: state, faults: [parseFaultRule('any:2:413')] });
    expect((await getStatus(sb.baseUrl, 'h0')).status).toBe(404);
    const r = await createPayouts(sb.baseUrl, { payouts: [payout('h1')] });
    expect(r.status).toBe(413);
    expect(r.body.success).toBe(false);
    expect((await readSandboxLedger(state)).size).toBe(0);
  });

  it('cuts the connection after applying (cut-after-apply)', async () => {
    const state = fx.state();
    const sb = await fx.start({ stateDir: state, faults: [parseFaultRule('create:1:cut')] });
    await expect(createPayouts(sb.baseUrl, { payouts: [payout('k1')] })).rejects.toThrow();
    expect((await readSandboxLedger(state)).get('k1')).toMatchObject({
      applied: 1,
      status: 'success',
    });
    const again = await createPayouts(sb.baseUrl, { payouts: [payout('k1')] });
    expect(again.body.data.results[0].message).toBe('Duplicate reference_id: already used');
  });

  it('cuts the connection before applying (cut-before-apply)', async () => {
    const state = fx.state();
    const sb = await fx.start({ stateDir: state, faults: [parseFaultRule('create:1:cut-before')] });
    await expect(createPayouts(sb.baseUrl, { payouts: [payout('k2')] })).rejects.toThrow();
    expect((await readSandboxLedger(state)).size).toBe(0);
    const again = await createPayouts(sb.baseUrl, { payouts: [payout('k2')] });
    expect(again.body.data.results[0].status).toBe('success');
  });

  it('delays every answer by latencyMs', async () => {
    const sb = await fx.start({ latencyMs: 150 });
    const answer = getStatus(sb.baseUrl, 'none').then((r) => ({ answered: r }));
    // Both timers run on this process's clock: one set after the request, for a third of the
    // latency, fires first unless the answer is not delayed.
    const first = await Promise.race([answer, new Promise((r) => setTimeout(r, 50, 'timer'))]);
    expect(first).toBe('timer');
    expect((await answer).answered.status).toBe(404);
  });
});

describe('lifecycle and options', () => {
  it('closes with keep-alive connections open, and stops listening', async () => {
    const sb = await startSandbox({ stateDir: fx.state() });
    await createPayouts(sb.baseUrl, { payouts: [payout('z1')] });
    await sb.close();
    await expect(getStatus(sb.baseUrl, 'z1')).rejects.toThrow();
  });

  it('refuses a host that is not loopback', async () => {
    await expect(startSandbox({ stateDir: fx.state(), host: '0.0.0.0' })).rejects.toThrow(
      UsageError,
    );
    await expect(startSandbox({ stateDir: fx.state(), host: '192.168.1.10' })).rejects.toThrow(
      /loopback only/,
    );
  });

  it('refuses bad options', async () => {
    await expect(startSandbox({ stateDir: fx.state(), pathPrefix: 'merchant' })).rejects.toThrow(
      /path prefix "merchant" must be a URL path/,
    );
    await expect(startSandbox({ stateDir: fx.state(), port: 70000 })).rejects.toThrow(
      /at most 65535/,
    );
    await expect(startSandbox({ stateDir: fx.state(), maxPayoutsPerRequest: 0 })).rejects.toThrow(
      UsageError,
    );
  });

  it('reports a port in use as a usage error', async () => {
    const a = await fx.start();
    await expect(startSandbox({ stateDir: fx.state(), port: a.port })).rejects.toThrow(
      /port is in use/,
    );
  });

  it('logs requests through the log option', async () => {
    const lines: string[] = [];
    const sb = await fx.start({ log: (l) => lines.push(l) });
    await getStatus(sb.baseUrl, 'x');
    expect(lines.some((l) => /^listening on http:\/\/127\.0\.0\.1:\d+$/.test(l))).toBe(true);
    expect(lines.some((l) => /^GET \/api\/v1\/payouts\/x -> 404/.test(l))).toBe(true);
  });
});
