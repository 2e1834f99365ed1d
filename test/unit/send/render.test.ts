import { describe, expect, it } from 'vitest';
import { formatCharges, jsonText, resultItemJson } from '../../../src/core/send/render.js';
import { CurrencyTable } from '../../../src/money/currencies.js';

describe('jsonText', () => {
  it('writes every string exactly as JSON.stringify does', () => {
    const samples = [
      '',
      'BENCH-00000001',
      'a b~!#$%&()*+,-./:;<=>?@[]^_`{|}',
      'quote " inside',
      'back\\slash',
      'tab\there',
      'line\nbreak\r',
      '\u0000\u001f\u007f',
      'Größe ✓ 日本',
      '😀',
      '\ud800 lone \udfff',
      '\u2028\u2029',
    ];
    for (let c = 0; c < 0x100; c++) samples.push(`x${String.fromCharCode(c)}y`);
    for (const s of samples) expect(jsonText(s)).toBe(JSON.stringify(s));
  });

  it('makes result lines that parse back to their fields', () => {
    const line = resultItemJson(
      {
        reference_id: 'R "1"\t✓',
        status: 'success',
        transaction_id: 'T\\1',
        amount: '10.50',
        currency: 'EUR',
        charges: 0.25,
        message: 'ok\n',
      },
      '0.25',
    );
    expect(line).toBe(
      '{"reference_id": "R \\"1\\"\\t✓", "status": "success", "service_status": "success", "transaction_id": "T\\\\1", "amount": "10.50", "currency": "EUR", "charges": "0.25", "message": "ok\\n", "sent_earlier": false, "found_at_service": false, "retried_as": null, "paid_by_retry": false}',
    );
    expect(JSON.parse(line)).toMatchObject({ reference_id: 'R "1"\t✓', transaction_id: 'T\\1' });
  });

  it('keep status to its enumerated values: another status of the service goes in service_status', () => {
    const row = { reference_id: 'R', amount: '1.00', currency: 'EUR' };
    const fields = (status: string) => {
      const { status: s, service_status } = JSON.parse(resultItemJson({ ...row, status }, null));
      return [s, service_status];
    };
    expect(fields('processing')).toEqual(['undocumented', 'processing']);
    expect(fields('canceled')).toEqual(['canceled', 'canceled']);
    expect(fields('not_sent')).toEqual(['not_sent', null]);
    expect(fields('unknown')).toEqual(['unknown', null]);
  });
});

describe('formatCharges', () => {
  it('writes charges as a plain decimal, never with an exponent', () => {
    const o = { reference_id: 'R', status: 'success', amount: '1.00', currency: 'EUR' };
    const currencies = new CurrencyTable();
    expect(formatCharges({ ...o, charges: 0.5 }, currencies)).toBe('0.50');
    expect(formatCharges({ ...o, charges: 1e-7 }, currencies)).toBe('0.0000001');
  });
});
