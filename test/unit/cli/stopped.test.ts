import { describe, expect, it } from 'vitest';
import { reportStopped } from '../../../src/main.js';
import { Output } from '../../../src/output/output.js';
import { checkJsonDocument } from '../../helpers/json-schema.js';
import { memoryRuntime } from '../../helpers/main.js';

describe('reportStopped (the process exits before the run reported)', () => {
  it('prints the interruption and, under --json, a document whose exit_code is 130', async () => {
    const { runtime, stdout, stderr } = memoryRuntime();
    const argv = ['send', 'x.csv', '--yes', '--json'];
    const code = await reportStopped(argv, runtime);
    expect(code).toBe(130);
    expect(stderr()).toMatch(/stopped at once.*reads back the payouts in doubt/);
    checkJsonDocument(argv, { code, stdout: stdout(), stderr: stderr() });
    const doc = JSON.parse(stdout()) as { error: { type: string } };
    expect(doc.error.type).toBe('InterruptedError');
  });

  it('prints no second document after the run began its own', async () => {
    const { runtime, stdout } = memoryRuntime();
    const { stdin, stdout: out, stderr: err } = runtime;
    new Output({
      stdin,
      stdout: out,
      stderr: err,
      json: true,
      debug: false,
      noColor: true,
    }).printJson({
      begun: true,
    });
    await reportStopped(['send', 'x.csv', '--json'], runtime);
    expect(JSON.parse(stdout())).toEqual({ begun: true });
  });
});
