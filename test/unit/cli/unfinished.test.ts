import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { Runtime } from '../../../src/context.js';
import { ExitCode } from '../../../src/exit-codes.js';
import { reportUnfinished } from '../../../src/main.js';

/** A runtime over in-memory streams, with what was written to stdout and stderr. */
function memoryRuntime() {
  const text = { stdout: '', stderr: '' };
  const stream = (key: 'stdout' | 'stderr') => {
    const s = new PassThrough();
    s.setEncoding('utf8').on('data', (d: string) => {
      text[key] += d;
    });
    return s;
  };
  const runtime: Runtime = {
    env: {},
    stdin: new PassThrough(),
    stdout: stream('stdout'),
    stderr: stream('stderr'),
    cwd: '/',
    pid: 1,
    version: '0.0.0-test',
    interrupt: new AbortController().signal,
  };
  return { runtime, text };
}

describe('reportUnfinished (the event loop emptied before main settled)', () => {
  it('reports an internal error on stderr and exits 1, never 0', async () => {
    const { runtime, text } = memoryRuntime();
    const code = await reportUnfinished(['status', 'R1'], runtime);
    expect(code).toBe(ExitCode.internal);
    expect(text.stderr).toMatch(/internal error: the run stopped with work unfinished/);
    expect(text.stdout).toBe('');
  });

  it('prints the error document under --json', async () => {
    const { runtime, text } = memoryRuntime();
    const code = await reportUnfinished(['--json', 'send', 'x.csv'], runtime);
    expect(code).toBe(ExitCode.internal);
    const doc = JSON.parse(text.stdout) as { error: { message: string; exit_code: number } };
    expect(doc.error.exit_code).toBe(1);
    expect(doc.error.message).toMatch(/^the run stopped with work unfinished/);
  });
});
