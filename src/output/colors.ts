import type { Chalk, ChalkInstance } from 'chalk';
import type { OutStream } from './output.js';

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

/** The colour level of a stream: 1 on a terminal unless colour is turned off, else 0. */
export function colorLevel(stream: OutStream, noColor: boolean): 0 | 1 {
  return !noColor && stream.isTTY ? 1 : 0;
}
