import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../../src/exit-codes.js';
import { reportUnfinished } from '../../../src/main.js';
import { memoryRuntime } from '../../helpers/main.js';

describe('reportUnfinished (the event loop emptied before main settled)', () => {
  it('reports an internal error on stderr and exits 1, never 0', async () => {
    const { runtime, stdout, stderr } = memoryRuntime();
    const code = await reportUnfinished(['status', 'R1'], runtime);
    expect(code).toBe(ExitCode.internal);
    expect(stderr()).toMatch(/internal error: the run stopped with work unfinished/);
    expect(stdout()).toBe('');
  });

  it('prints the error document under --json', async () => {
    const { runtime, stdout } = memoryRuntime();
    const code = await reportUnfinished(['--json', 'send', 'x.csv'], runtime);
    expect(code).toBe(ExitCode.internal);
    const doc = JSON.parse(stdout()) as {
      error: { type: string; message: string; exit_code: number };
    };
    expect(doc.error.type).toBe('InternalError');
    expect(doc.error.exit_code).toBe(1);
    expect(doc.error.message).toMatch(/^the run stopped with work unfinished/);
  });
});
