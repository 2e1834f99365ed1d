/** Reading a source's bytes, decoded to UTF-8 on the way, with failures turned into problems. */

import { type InputEncoding, InputDecoder } from './encoding.js';
import { readErrorMessage } from './source.js';
import type { InputSource } from './types.js';

/** How reading a source ended. */
export type ChunksOutcome = 'done' | 'stopped' | 'failed';

/** Reports a file-level problem: where (or undefined) and what is wrong. */
export type FileProblem = (location: string | undefined, message: string) => void;

/** How to read a source's bytes, and where its problems go. */
export interface ChunkReading {
  /** Whether the file is CSV: messages then name Excel's "CSV UTF-8". */
  csv: boolean;
  /** From --encoding; a byte-order mark wins over it. Else UTF-8. */
  encoding: InputEncoding | undefined;
  fail: FileProblem;
  /** Optional backpressure, asked between chunks (see IntakeSink.ready). */
  ready?: () => Promise<void> | undefined;
}

/**
 * Receives the next UTF-8 bytes and the encoding the file is read in (known from the first
 * bytes on); answers whether to go on.
 */
export type ChunkHandler = (chunk: Buffer, encoding: InputEncoding) => boolean | Promise<boolean>;

/**
 * Hands the source's bytes, as UTF-8, chunk by chunk, to `onChunk`. Bytes reach it only once
 * known to be valid text. A source that cannot be read, or is not valid text in its encoding,
 * is reported through `fail` and gives 'failed'.
 */
export async function readChunks(
  source: InputSource,
  reading: ChunkReading,
  onChunk: ChunkHandler,
): Promise<ChunksOutcome> {
  const decoder = new InputDecoder(reading.encoding, reading.csv);
  let iterator: AsyncIterator<string | Buffer>;
  try {
    iterator = source.open()[Symbol.asyncIterator]();
  } catch (err) {
    reading.fail(undefined, readErrorMessage(err));
    return 'failed';
  }
  const refused = (): 'failed' => {
    const f = decoder.failure!;
    reading.fail(`line ${f.line}`, f.message);
    return 'failed';
  };
  let finished = false;
  try {
    for (;;) {
      let next: IteratorResult<string | Buffer>;
      try {
        next = await iterator.next();
      } catch (err) {
        finished = true;
        reading.fail(undefined, readErrorMessage(err));
        return 'failed';
      }
      if (next.done) {
        finished = true;
        break;
      }
      const raw = typeof next.value === 'string' ? Buffer.from(next.value, 'utf8') : next.value;
      const chunk = decoder.push(raw);
      if (chunk === undefined) return refused();
      if (chunk.length === 0) continue;
      const go = onChunk(chunk, decoder.encoding);
      if (!(typeof go === 'boolean' ? go : await go)) return 'stopped';
      const wait = reading.ready?.();
      if (wait) await wait;
    }
  } finally {
    // Stopping early must still close the file.
    if (!finished) await iterator.return?.();
  }
  const last = decoder.end();
  if (last === undefined) return refused();
  if (last.length > 0) {
    const go = onChunk(last, decoder.encoding);
    if (!(typeof go === 'boolean' ? go : await go)) return 'stopped';
  }
  return 'done';
}
