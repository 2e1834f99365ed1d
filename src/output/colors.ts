import type { Chalk, ChalkInstance } from 'chalk';
import type { Env } from '../paths.js';
import type { OutStream } from './streams.js';

/** chalk's constructor, passed in by whoever loaded chalk. */
export type ChalkConstructor = typeof Chalk;

/** Styles that leave text as it is, as chalk does at level 0, without loading chalk. */
export const PLAIN: ChalkInstance = plainStyles();

/** A style function whose every style property (red, bold.yellow, ...) is itself. */
function plainStyles(): ChalkInstance {
  // chalk's own rule: one argument as its text, several joined by spaces.
  const style = (...text: unknown[]) => (text.length === 1 ? `${text[0]}` : text.join(' '));
  const styles: ChalkInstance = new Proxy(style, {
    get(_target, key) {
      if (key === 'level') return 0;
      // Not a thenable, and nothing for symbols: only style names chain.
      if (typeof key !== 'string' || key === 'then') return undefined;
      return styles;
    },
  }) as unknown as ChalkInstance;
  return styles;
}

/**
 * Whether the user turned colour off: `--no-color`, NO_COLOR (any value but empty, as
 * no-color.org says), FORCE_COLOR=0 or false, or TERM=dumb.
 */
export function colourTurnedOff(env: Env, noColorFlag: boolean): boolean {
  if (noColorFlag) return true;
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return true;
  if (env.FORCE_COLOR === '0' || env.FORCE_COLOR === 'false') return true;
  return env.TERM === 'dumb';
}

/** A stream Node made for a terminal knows whether it shows colours (tty.WriteStream). */
type MaybeTerminal = OutStream & { hasColors?: (env?: object) => boolean };

/**
 * The colour level of a stream: 1 on a terminal that shows colours, by Node's own reading of
 * the environment (TERM, COLORTERM, FORCE_COLOR, ...), unless colour is turned off; else 0.
 */
export function colorLevel(stream: MaybeTerminal, noColor: boolean, env?: Env): 0 | 1 {
  if (noColor || !stream.isTTY) return 0;
  if (typeof stream.hasColors === 'function' && !stream.hasColors(env)) return 0;
  return 1;
}
