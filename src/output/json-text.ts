/**
 * The text of --json output: amounts digit for digit (RawNumber), the items of a long list
 * (rawListItem) and a document that ends in a list of them (writeRawList), and --json-lines'
 * lines: a result line each, then the summary line.
 */
import { InternalError } from '../errors.js';

/** A JSON number kept as its exact decimal text (an amount), written into --json output as is. */
export class RawNumber {
  constructor(readonly text: string) {}
}

const RAW_MARK = '\u0000raw:';

/**
 * JSON.stringify that writes RawNumber values digit for digit, so "12.50" stays 12.50;
 * indented by `indent` spaces a level (0: one line).
 */
export function stringifyJson(doc: unknown, indent = 2): string {
  const text = JSON.stringify(
    doc,
    (_key, value) => (value instanceof RawNumber ? `${RAW_MARK}${value.text}` : value),
    indent,
  );
  return text.replace(/"\\u0000raw:([0-9.]+)"/g, '$1');
}

/** What follows each item of a raw list (see rawListItem). */
export const RAW_ITEM_END = ',\n';

/** One list item, as JSON text, in the layout printJsonWithRawList takes: indented, then a comma. */
export function rawListItem(json: string): string {
  return `    ${json}${RAW_ITEM_END}`;
}

/** Bytes before an item's JSON text in a rawListItem line. */
export const RAW_ITEM_INDENT = 4;

/** What starts each result line of a --json-lines run, before the result's own fields. */
const RESULT_LINE = '{"line": "result", ';

/** A result (a JSON object's text) as a --json-lines result line, newline included. */
export function resultLine(json: string): string {
  return `${RESULT_LINE}${json.slice(1)}\n`;
}

/** The summary line of a --json-lines run: the fields of its document but its results. */
export function summaryLine(fields: Record<string, unknown>): string {
  return `${stringifyJson({ line: 'summary', ...fields }, 0)}\n`;
}

/**
 * A document as --json-lines writes it: a result line for each of its `results`, then the
 * rest as the summary line; a document without results (another command's) as one line.
 */
export function documentLines(doc: unknown): string[] {
  const { results, ...rest } = (doc ?? {}) as { results?: unknown };
  if (!Array.isArray(results)) return [`${stringifyJson(doc, 0)}\n`];
  return [...results.map((r) => resultLine(stringifyJson(r, 0))), summaryLine(rest)];
}

/** Where writeRawList writes: false from `write` when the caller should wait for `drained`. */
export interface RawListSink {
  write(text: string): boolean;
  drained(): Promise<void>;
}

/**
 * Writes a document whose last field, `key`, is a list given as raw chunks of items as
 * rawListItem made them (Output.printJsonWithRawList), waiting for a slow reader.
 */
export async function writeRawList(
  head: Record<string, unknown>,
  key: string,
  chunks: Iterable<string>,
  out: RawListSink,
): Promise<void> {
  const opening = stringifyJson(head);
  out.write(`${opening === '{}' ? '{' : `${opening.slice(0, -2)},`}\n  ${JSON.stringify(key)}: [`);
  // The last item must lose its comma: the latest chunk is held back until the next arrives.
  let held: string | undefined;
  for (const chunk of chunks) {
    if (chunk.length === 0) continue;
    if (held === undefined) {
      out.write('\n');
      held = chunk;
    } else if (chunk.length < RAW_ITEM_END.length) {
      held += chunk;
    } else {
      // A pipe to a slow reader fills up: wait for it rather than buffer the whole run.
      if (!out.write(held)) await out.drained();
      held = chunk;
    }
  }
  if (held === undefined) {
    out.write(']\n}\n');
    return;
  }
  if (!held.endsWith(RAW_ITEM_END)) {
    throw new InternalError('a raw JSON list does not end with a complete item');
  }
  out.write(`${held.slice(0, -RAW_ITEM_END.length)}\n  ]\n}\n`);
}
