import { Writable } from 'node:stream';
import { Chalk } from 'chalk';
import { describe, expect, it } from 'vitest';
import { colorLevel, colourTurnedOff, PLAIN } from '../../../src/output/colors.js';
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

  it("follows a terminal's own answer to whether it shows colours, with the CLI's environment", () => {
    const seen: unknown[] = [];
    const tty = Object.assign(stream(true), {
      hasColors: (env?: object) => {
        seen.push(env);
        return false;
      },
    });
    const env = { TERM: 'vt100' };
    expect(colorLevel(tty, false, env)).toBe(0);
    expect(seen).toEqual([env]);
    expect(colorLevel(Object.assign(stream(true), { hasColors: () => true }), false, env)).toBe(1);
  });
});

describe('turning colour off', () => {
  it('takes --no-color, NO_COLOR, FORCE_COLOR=0 and TERM=dumb', () => {
    expect(colourTurnedOff({ TERM: 'xterm' }, false)).toBe(false);
    expect(colourTurnedOff({ NO_COLOR: '' }, false)).toBe(false);
    expect(colourTurnedOff({ FORCE_COLOR: '1' }, false)).toBe(false);
    expect(colourTurnedOff({}, true)).toBe(true);
    expect(colourTurnedOff({ NO_COLOR: '1' }, false)).toBe(true);
    expect(colourTurnedOff({ FORCE_COLOR: '0' }, false)).toBe(true);
    expect(colourTurnedOff({ FORCE_COLOR: 'false' }, false)).toBe(true);
    expect(colourTurnedOff({ TERM: 'dumb' }, false)).toBe(true);
  });
});
