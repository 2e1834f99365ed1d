import { describe, expect, it } from 'vitest';
import { errorCode } from '../../src/errors.js';

/** An error carrying `code`, as Node and undici build them. */
function coded(code: unknown, cause?: unknown): Error {
  return Object.assign(new Error('x', cause === undefined ? {} : { cause }), { code });
}

describe('errorCode', () => {
  it('reads the code of a system error, or of the error it wraps', () => {
    expect(errorCode(coded('ENOENT'))).toBe('ENOENT');
    expect(errorCode(new TypeError('fetch failed', { cause: coded('ECONNREFUSED') }))).toBe(
      'ECONNREFUSED',
    );
    expect(errorCode(coded('UND_ERR', coded('UND_ERR_SOCKET')))).toBe('UND_ERR_SOCKET');
  });

  it('looks 4 levels deep at most, and ignores codes that are not strings', () => {
    const deep = (levels: number) => {
      let e: unknown = coded('EPIPE');
      for (let i = 0; i < levels; i++) e = new Error('wrap', { cause: e });
      return e;
    };
    expect(errorCode(deep(3))).toBe('EPIPE');
    expect(errorCode(deep(4))).toBeUndefined();
    expect(errorCode(coded(42))).toBeUndefined();
    expect(errorCode('ENOENT')).toBeUndefined();
    expect(errorCode(null)).toBeUndefined();
  });
});
