import { describe, expect, it } from 'vitest';
import { redactSecret } from '../../../src/api/client.js';

describe('redactSecret', () => {
  it('removes the secret as is and JSON-escaped, however often it appears', () => {
    const secret = 'p"a\\ss';
    const once = JSON.stringify(secret).slice(1, -1);
    const twice = JSON.stringify(once).slice(1, -1);
    const text = `a ${secret} b ${once} c ${twice} d ${secret}`;
    const out = redactSecret(text, secret);
    expect(out).toBe('a [redacted] b [redacted] c [redacted] d [redacted]');
  });

  it('leaves text without the secret, and an empty secret, alone', () => {
    expect(redactSecret('nothing here', 'abc123')).toBe('nothing here');
    expect(redactSecret('text', '')).toBe('text');
  });
});
