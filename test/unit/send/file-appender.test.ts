import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FileAppender } from '../../../src/core/send/file-appender.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** An empty file in a fresh folder, open for writing. */
function emptyFile(): { path: string; fd: number } {
  const dir = mkdtempSync(join(tmpdir(), 'payouts-appender-'));
  dirs.push(dir);
  const path = join(dir, 'out');
  return { path, fd: openSync(path, 'w+') };
}

describe('FileAppender', () => {
  it('writes every text in order, and counts bytes, not characters', () => {
    const { path, fd } = emptyFile();
    const writes: number[] = [];
    const out = new FileAppender(fd, 64, (from) => writes.push(from));
    const texts = ['abc\n', 'Größe ✓ 😀\n', 'x'.repeat(30), 'y'.repeat(500), 'z\n'];
    let bytes = 0;
    for (const t of texts) {
      expect(out.length).toBe(bytes);
      const n = out.append(t);
      expect(n).toBe(Buffer.byteLength(t));
      bytes += n;
    }
    expect(out.length).toBe(bytes);
    // The 500-byte text went out on its own, after what was buffered before it.
    expect(out.flushed).toBeLessThan(bytes);
    out.flush();
    expect(out.flushed).toBe(bytes);
    closeSync(fd);
    expect(readFileSync(path, 'utf8')).toBe(texts.join(''));
    // Each write out started where the one before it ended.
    expect(writes[0]).toBe(0);
    expect(writes).toEqual([...writes].sort((a, b) => a - b));
    expect(new Set(writes).size).toBe(writes.length);
  });

  it('keeps texts in its buffer until it fills or is flushed', () => {
    const { path, fd } = emptyFile();
    const out = new FileAppender(fd, 1024);
    out.append('held\n');
    expect(readFileSync(path, 'utf8')).toBe('');
    out.flush();
    expect(readFileSync(path, 'utf8')).toBe('held\n');
    out.flush();
    closeSync(fd);
    expect(readFileSync(path, 'utf8')).toBe('held\n');
  });
});
