/** Reading a source's bytes, checked as UTF-8 on the way, with failures turned into problems. */

import { readErrorMessage } from './source.js';
import type { InputSource } from './types.js';
import { Utf8Guard, utf8FailureMessage } from './utf8.js';

/** How reading a source ended. */
export type ChunksOutcome = 'done' | 'stopped' | 'failed';

/** Reports a file-level problem: where (or undefined) and what is wrong. */
export type FileProblem = (location: string | undefined, message: string) => void;

/**
 * Hands the source's bytes, chunk by chunk, to `onChunk`, which answers whether to go on.
 * Bytes reach it only once known to be UTF-8. A source that cannot be read, or is not
 * UTF-8, is reported through `fail` and gives 'failed'.
 */
export async function readChunks(
  source: InputSource,
  csv: boolean,
  fail: FileProblem,
  onChunk: (chunk: Buffer) => boolean | Promise<boolean>,
  ready?: () => Promise<void> | undefined,
): Promise<ChunksOutcome> {
  const guard = new Utf8Guard();
  let iterator: AsyncIterator<string | Buffer>;
  try {
    iterator = source.open()[Symbol.asyncIterator]();
  } catch (err) {
    fail(undefined, readErrorMessage(err));
    return 'failed';
  }
  let finished = false;
  try {
    for (;;) {
      let next: IteratorResult<string | Buffer>;
      try {
        next = await iterator.next();
      } catch (err) {
        finished = true;
        fail(undefined, readErrorMessage(err));
        return 'failed';
      }
      if (next.done) {
        finished = true;
        break;
      }
      const chunk = typeof next.value === 'string' ? Buffer.from(next.value, 'utf8') : next.value;
      if (!guard.push(chunk)) break;
      const go = onChunk(chunk);
      if (!(typeof go === 'boolean' ? go : await go)) return 'stopped';
      const wait = ready?.();
      if (wait) await wait;
    }
  } finally {
    // Stopping early must still close the file.
    if (!finished) await iterator.return?.();
  }
  if (!guard.end()) {
    const f = guard.failure!;
    fail(`line ${f.line}`, utf8FailureMessage(f, csv));
    return 'failed';
  }
  return 'done';
}
