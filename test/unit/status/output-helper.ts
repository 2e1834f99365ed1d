import { PassThrough } from 'node:stream';
import { Output } from '../../../src/output/output.js';

/** An Output over in-memory streams, with what was written to stdout and stderr. */
export function memoryOutput(opts: { json?: boolean; debug?: boolean; tty?: boolean } = {}) {
  const stdout = Object.assign(new PassThrough(), { isTTY: opts.tty ?? false });
  const stderr = Object.assign(new PassThrough(), { isTTY: opts.tty ?? false });
  const stdin = Object.assign(new PassThrough(), { isTTY: opts.tty ?? false });
  let out = '';
  let err = '';
  stdout.setEncoding('utf8').on('data', (d: string) => {
    out += d;
  });
  stderr.setEncoding('utf8').on('data', (d: string) => {
    err += d;
  });
  const output = new Output({
    stdout,
    stderr,
    stdin,
    json: opts.json ?? false,
    debug: opts.debug ?? false,
    noColor: true,
  });
  return { output, stdin, stdout: () => out, stderr: () => err };
}
