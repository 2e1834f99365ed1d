import { describe, expect, it } from 'vitest';
import {
  errorCode,
  errorMessage,
  InternalError,
  PayoutsError,
  UsageError,
} from '../../src/errors.js';
import { ExitCode, exitCodeForError } from '../../src/exit-codes.js';
import { reportError } from '../../src/main.js';
import { memoryRuntime } from '../helpers/main.js';

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

describe('InternalError', () => {
  it('exits 1 and is shown as an internal error, like an unexpected Error', async () => {
    expect(exitCodeForError(new InternalError('x'))).toBe(ExitCode.internal);
    for (const error of [new InternalError('broken rule'), new Error('broken rule')]) {
      const { runtime, stderr } = memoryRuntime();
      const code = await reportError(error, runtime, { json: false, debug: false });
      expect(code).toBe(1);
      expect(stderr()).toContain('internal error: broken rule');
    }
  });

  it('keeps expected errors free of the prefix, and names its type under --json', async () => {
    const usage = memoryRuntime();
    await reportError(new UsageError('bad flag'), usage.runtime, { json: false, debug: false });
    expect(usage.stderr()).not.toContain('internal error');
    const json = memoryRuntime();
    await reportError(new InternalError('broken rule'), json.runtime, { json: true, debug: false });
    expect(JSON.parse(json.stdout())).toEqual({
      schema_version: 1,
      command: null,
      error: {
        type: 'InternalError',
        message: 'broken rule',
        exit_code: 1,
        problems: null,
        problem_count: null,
        references: null,
      },
    });
    expect(new InternalError('x')).toBeInstanceOf(PayoutsError);
  });
});

describe('errorMessage', () => {
  it('gives the message of an Error and the text of anything else thrown', () => {
    expect(errorMessage(new RangeError('out of range'))).toBe('out of range');
    expect(errorMessage('plain text')).toBe('plain text');
    expect(errorMessage(undefined)).toBe('undefined');
  });
});
