import { Writable } from 'node:stream';
import { Chalk } from 'chalk';
import { describe, expect, it } from 'vitest';
import { colorLevel, PLAIN } from '../../../src/output/colors.js';
import { Output, type OutStream } from '../../../src/output/output.js';

describe('PLAIN', () => {
  it('writes what chalk writes at level 0, for every style chain the CLI uses', () => {
    const chalk = new Chalk({ level: 0 });
    const cases: Array<[(c: typeof chalk) => string]> = [
      [(c) => c.bold('head')],
      [(c) => c.bold.yellow('warn')],
      [(c) => c.dim('quiet')],
      [(c) => c.green('ok')],
      [(c) => c.red('error:', 2, null)],
      [(c) => c.yellow(3)],
      [(c) => c.red()],
    ];
    for (const [write] of cases) expect(write(PLAIN)).toBe(write(chalk));
    expect(PLAIN.level).toBe(0);
  });

  it('is not taken for a promise', async () => {
    expect(await Promise.resolve(PLAIN)).toBe(PLAIN);
  });
});

describe('colours of an Output', () => {
  /** A stream that keeps what is written, a terminal or not. */
  function stream(isTTY: boolean): OutStream & { text: string } {
    const s = new Writable({
      write(chunk, _encoding, done) {
        s.text += String(chunk);
        done();
      },
    }) as Writable & { isTTY?: boolean; text: string };
    s.text = '';
    s.isTTY = isTTY;
    return s;
  }

  it('colours a terminal with the chalk it is given, and nothing else', () => {
    const tty = stream(true);
    const pipe = stream(false);
    new Output({
      stdout: pipe,
      stderr: tty,
      stdin: process.stdin,
      json: false,
      debug: false,
      noColor: false,
      chalk: Chalk,
    }).warn('careful');
    expect(tty.text).toBe('\u001b[33mwarning:\u001b[39m careful\n');
    const plain = stream(true);
    new Output({
      stdout: pipe,
      stderr: plain,
      stdin: process.stdin,
      json: false,
      debug: false,
      noColor: false,
    }).warn('careful');
    expect(plain.text).toBe('warning: careful\n');
  });

  it('gives level 0 to a pipe, and to a terminal under NO_COLOR', () => {
    expect(colorLevel(stream(false), false)).toBe(0);
    expect(colorLevel(stream(true), true)).toBe(0);
    expect(colorLevel(stream(true), false)).toBe(1);
  });
});
