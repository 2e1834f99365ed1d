import { describe, expect, it } from 'vitest';
import { redactSecret } from '../../../src/api/client.js';
import { Redactor } from '../../../src/api/secret.js';

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

  it('removes every form a JSON or URL encoder writes, any \\uXXXX in either case', () => {
    const secret = 'a/b+C"d\\e';
    const u = (c: string, up: boolean) => {
      const h = c.charCodeAt(0).toString(16).padStart(4, '0');
      return `\\u${up ? h.toUpperCase() : h}`;
    };
    const forms = [
      'a\\/b+C\\"d\\\\e', // PHP: \/
      'a/b\\u002BC\\u0022d\\u005Ce', // .NET: \u002B
      [...secret].map((c, i) => u(c, i % 2 === 0)).join(''),
      encodeURIComponent(secret),
      'a\\\\\\/b\\\\u002bC\\\\\\"d\\\\\\\\e', // escaped once more, inside a string
    ];
    for (const form of forms) expect(redactSecret(`<${form}>`, secret), form).toBe('<[redacted]>');
    // Each form decodes to the secret: the patterns are about the secret, not look-alikes.
    expect(JSON.parse(`"${forms[0]}"`)).toBe(secret);
    expect(JSON.parse(`"${forms[1]}"`)).toBe(secret);
    expect(JSON.parse(`"${forms[2]}"`)).toBe(secret);
    expect(redactSecret('a/b+C"d\\f', secret)).toBe('a/b+C"d\\f');
  });

  it('redacts every string of a decoded answer, keys included', () => {
    const r = new Redactor('s3cr3t/x');
    const decoded = JSON.parse(
      '{"message":["s3cr3t\\/x"],"data":{"s3cr3t\\u002fx":[1,"ok",{"m":"is s3cr3t/x"}],"__proto__":"s3cr3t/x"}}',
    );
    const out = r.value(decoded) as Record<string, unknown>;
    expect(JSON.stringify(out)).not.toContain('s3cr3t');
    expect(out).toEqual({
      message: ['[redacted]'],
      data: JSON.parse('{"[redacted]":[1,"ok",{"m":"is [redacted]"}],"__proto__":"[redacted]"}'),
    });
  });
});
