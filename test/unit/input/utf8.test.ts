import { describe, expect, it } from 'vitest';
import { firstInvalidByte, Utf8Guard, utf8FailureMessage } from '../../../src/input/utf8.js';

/** Runs bytes through a guard in chunks of `size`; the failure, or undefined. */
function guard(bytes: Buffer, size: number) {
  const g = new Utf8Guard();
  for (let i = 0; i < bytes.length; i += size)
    if (!g.push(bytes.subarray(i, i + size))) return g.failure;
  return g.end() ? undefined : g.failure;
}

describe('Utf8Guard', () => {
  const valid = Buffer.from('a\né ü\n日本 🦄🎉\nz', 'utf8');

  it('accepts valid UTF-8 whatever the chunk boundaries', () => {
    for (let size = 1; size <= valid.length; size++)
      expect(guard(valid, size), `size ${size}`).toBeUndefined();
  });

  it('finds a Windows-1252 byte and its line, whatever the chunk boundaries', () => {
    const bad = Buffer.concat([
      Buffer.from('line1\nline2\nRen'),
      Buffer.from([0xe9]),
      Buffer.from('\nline4'),
    ]);
    for (let size = 1; size <= bad.length; size++) {
      expect(guard(bad, size), `size ${size}`).toEqual({
        line: 3,
        byte: 0xe9,
        offset: 15,
        kind: 'invalid',
      });
    }
  });

  it('refuses overlong forms, surrogates, and a text cut inside a character', () => {
    expect(guard(Buffer.from([0x61, 0xc0, 0xaf]), 64)?.kind).toBe('invalid');
    expect(guard(Buffer.from([0xed, 0xa0, 0x80]), 1)?.kind).toBe('invalid');
    expect(guard(Buffer.from([0x61, 0x0a, 0xe6, 0x97]), 1)).toEqual({
      line: 2,
      byte: undefined,
      offset: 2,
      kind: 'truncated',
    });
  });

  it('refuses NUL bytes at the start (UTF-16 without a byte-order mark)', () => {
    expect(guard(Buffer.from('a\n\u0000b', 'latin1'), 64)).toEqual({
      line: 2,
      byte: 0,
      offset: 2,
      kind: 'nul',
    });
  });
});

describe('utf8FailureMessage', () => {
  it('names --encoding for a legacy byte, with the byte and its offset', () => {
    const f = { line: 3, byte: 0xe4, offset: 57, kind: 'invalid' } as const;
    expect(utf8FailureMessage(f, true)).toBe(
      'not valid UTF-8 (byte 0xE4 at offset 57): if the file was saved as Windows-1252 or ISO-8859-1 (Excel "CSV" on Windows), pass --encoding windows-1252; or save it as "CSV UTF-8"',
    );
    expect(utf8FailureMessage({ ...f, kind: 'nul', byte: 0 }, true)).toMatch(
      /^not valid UTF-8 text \(byte 0x00 at offset 57: .*\): if it is UTF-16 text, pass --encoding utf-16le; or save it as "CSV UTF-8"$/,
    );
    expect(utf8FailureMessage({ ...f, kind: 'truncated', byte: undefined }, false)).toBe(
      'not valid UTF-8: it ends in the middle of a character (at offset 57): if the file was written in Windows-1252 or ISO-8859-1, pass --encoding windows-1252; or save it with UTF-8 encoding',
    );
  });
});

describe('firstInvalidByte', () => {
  it('points at the first byte that does not start a valid character', () => {
    expect(firstInvalidByte(Buffer.from('abc'))).toBe(-1);
    expect(firstInvalidByte(Buffer.from([0x61, 0xc3, 0xa9, 0xe9, 0x62]))).toBe(3);
    expect(firstInvalidByte(Buffer.from([0xf4, 0x90, 0x80, 0x80]))).toBe(0);
  });
});
