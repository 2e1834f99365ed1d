import { appendFileSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import {
  Ledger,
  type LedgerLine,
  leadingReference,
  ledgerPath,
  plainAmount,
  readSandboxLedger,
  serializeLine,
} from '../../../src/sandbox/ledger.js';
import { createPayouts, Fixture, getStatus, payout } from './helpers.js';

const fx = new Fixture();
afterEach(() => fx.cleanup());

/** A stored payout line for direct ledger tests. */
function line(ref: string): LedgerLine {
  return {
    t: 'payout',
    reference_id: ref,
    status: 'success',
    amount: 1,
    minor: '100',
    currency: 'USD',
    recipient: 'r',
    description: '',
    transaction_id: `sbx_txn_${ref}`,
    charges: '1',
    created_at: '2025-01-01T00:00:00.000Z',
    batch_reference: 'b',
  };
}

describe('ledger file', () => {
  it('creates the sandbox folder with mode 0700 and appends one line per payout', async () => {
    const state = fx.state();
    const sb = await fx.start({ stateDir: state });
    expect(statSync(`${state}/sandbox`).mode & 0o777).toBe(0o700);
    const r = await createPayouts(sb.baseUrl, {
      payouts: [payout('a'), payout('b'), payout('c', { amount: -1 })],
    });
    expect(r.status).toBe(200);
    const lines = readFileSync(ledgerPath(state), 'utf8').trimEnd().split('\n');
    expect(lines.map((l) => JSON.parse(l).reference_id)).toEqual(['a', 'b']);
    expect(statSync(ledgerPath(state)).mode & 0o777).toBe(0o600);
  });

  it('reads back through readSandboxLedger, from another instance', async () => {
    const state = fx.state();
    const sb = await fx.start({ stateDir: state });
    await createPayouts(
      sb.baseUrl,
      '{"payouts":[' +
        '{"amount":100.00,"currency":"USD","recipient":"alice@example.com","reference_id":"usd"},' +
        '{"amount":125.500,"currency":"BHD","recipient":"x+pending","reference_id":"bhd"},' +
        '{"amount":1000,"currency":"jpy","recipient":"x+failed","reference_id":"jpy"},' +
        '{"amount":12345678901234567.89,"currency":"EUR","recipient":"big","reference_id":"big"}]}',
    );
    await createPayouts(sb.baseUrl, { payouts: [payout('usd')] });
    const ledger = await readSandboxLedger(state);
    expect(ledger.get('usd')).toEqual({
      applied: 1,
      duplicateAttempts: 1,
      status: 'success',
      amount: '100',
      currency: 'USD',
      recipient: 'alice@example.com',
    });
    expect(ledger.get('bhd')).toMatchObject({
      status: 'pending',
      amount: '125.5',
      currency: 'BHD',
    });
    expect(ledger.get('jpy')).toMatchObject({ status: 'failed', amount: '1000', currency: 'JPY' });
    // Exact from the request's digits, though the double holds 12345678901234568.
    expect(ledger.get('big')).toMatchObject({ amount: '12345678901234567.89' });
    expect(ledger.size).toBe(4);
  });

  it('writes amounts as the shortest exact decimal', () => {
    expect(plainAmount(12550n, 2)).toBe('125.5');
    expect(plainAmount(10000n, 2)).toBe('100');
    expect(plainAmount(125500n, 3)).toBe('125.5');
    expect(plainAmount(48000n, 0)).toBe('48000');
    expect(plainAmount(10n, 2)).toBe('0.1');
  });

  it('returns an empty map when no sandbox ever ran', async () => {
    expect((await readSandboxLedger(fx.state())).size).toBe(0);
  });

  it('catches up incrementally with lines appended by others', async () => {
    const state = fx.state();
    const ledger = new Ledger(state);
    await ledger.open();
    appendFileSync(ledgerPath(state), `${serializeLine(line('x1'))}\n`);
    await ledger.refresh();
    expect(ledger.get('x1')?.applied).toBe(1);
    // A fragment without its newline (a writer in progress) is left for the next read.
    const whole = serializeLine(line('x2'));
    appendFileSync(ledgerPath(state), whole.slice(0, 20));
    await ledger.refresh();
    expect(ledger.get('x2')).toBeUndefined();
    appendFileSync(ledgerPath(state), `${whole.slice(20)}\n`);
    await ledger.refresh();
    expect(ledger.get('x2')?.applied).toBe(1);
    expect(ledger.all().size).toBe(2);
  });

  it('cuts off a fragment left by a writer that died before appending', async () => {
    const state = fx.state();
    const logs: string[] = [];
    const ledger = new Ledger(state, (l) => logs.push(l));
    await ledger.open();
    const fragment = `${serializeLine(line('dead'))}`.slice(0, -3);
    writeFileSync(ledgerPath(state), `${serializeLine(line('ok'))}\n${fragment}`);
    await ledger.commit(() => ({ lines: [line('after')], value: undefined }));
    expect(ledger.get('after')?.applied).toBe(1);
    expect(ledger.get('ok')?.applied).toBe(1);
    expect(ledger.get('dead')).toBeUndefined();
    expect(logs.join('\n')).toMatch(/removed an incomplete last line/);
    expect(readFileSync(ledgerPath(state), 'utf8')).toBe(
      `${serializeLine(line('ok'))}\n${serializeLine(line('after'))}\n`,
    );
    const fresh = await readSandboxLedger(state);
    expect([...fresh.keys()].sort()).toEqual(['after', 'ok']);
  });

  it('reads lines in another key order, and skips unreadable ones', async () => {
    const state = fx.state();
    const logs: string[] = [];
    mkdirSync(`${state}/sandbox`, { recursive: true });
    const { t: _t, ...rest } = line('odd') as LedgerLine & { t: string };
    writeFileSync(
      ledgerPath(state),
      [
        JSON.stringify({ ...rest, t: 'payout' }),
        'not json',
        '{"t":"something-else"}',
        JSON.stringify({ reference_id: 'odd', t: 'duplicate', at: 'x' }),
        '',
      ].join('\n'),
    );
    const ledger = new Ledger(state, (l) => logs.push(l));
    await ledger.open();
    expect(ledger.get('odd')).toMatchObject({ applied: 1, duplicateAttempts: 1 });
    expect(ledger.get('odd')?.payout.transaction_id).toBe('sbx_txn_odd');
    expect(logs).toEqual([`ledger ${ledgerPath(state)}: skipped an unreadable line`]);
  });

  it('indexes a line by its leading reference without parsing it', () => {
    const text = serializeLine(line('a"b\\c/é'));
    expect(text.startsWith('{"t":"payout","reference_id":"a\\"b')).toBe(true);
    expect(leadingReference(text, '{"t":"payout","reference_id":"')).toBe('a"b\\c/é');
    expect(leadingReference(text, '{"t":"duplicate","reference_id":"')).toBeUndefined();
    expect(leadingReference(text.slice(0, 40), '{"t":"payout","reference_id":"')).toBeUndefined();
  });

  it('reloads when the ledger is removed to reset the sandbox', async () => {
    const state = fx.state();
    const sb = await fx.start({ stateDir: state });
    await createPayouts(sb.baseUrl, { payouts: [payout('r1')] });
    expect((await getStatus(sb.baseUrl, 'r1')).status).toBe(200);
    writeFileSync(ledgerPath(state), '');
    expect((await getStatus(sb.baseUrl, 'r1')).status).toBe(404);
    const again = await createPayouts(sb.baseUrl, { payouts: [payout('r1')] });
    expect(again.body.data.results[0].status).toBe('success');
  });

  it('answers a create on a large ledger with one append, leaving the old content as it was', async () => {
    const state = fx.state();
    const chunk: string[] = [];
    for (let i = 0; i < 10_000; i++) chunk.push(serializeLine(line(`bulk-${i}`)));
    mkdirSync(`${state}/sandbox`, { recursive: true });
    writeFileSync(ledgerPath(state), `${chunk.join('\n')}\n`, { flag: 'w' });
    const sb = await fx.start({ stateDir: state });
    const before = statSync(ledgerPath(state)).size;
    const payouts = Array.from({ length: 100 }, (_, i) => payout(`new-${i}`));
    const r = await createPayouts(sb.baseUrl, { payouts });
    expect(r.body.data.success_count).toBe(100);
    const dup = await createPayouts(sb.baseUrl, { payouts: [payout('bulk-9999')] });
    expect(dup.body.data.results[0].message).toBe('Duplicate reference_id: already used');
    const text = readFileSync(ledgerPath(state), 'utf8');
    // The old content is untouched: only appended to.
    expect(text.slice(0, before)).toBe(`${chunk.join('\n')}\n`);
    expect(text.slice(before).trimEnd().split('\n')).toHaveLength(101);
  });
});
