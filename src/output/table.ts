/** A colour sequence, which takes no room on the screen. */
const SGR = /\u001b\[[0-9;]*m/g;

/** How many columns a cell takes on the screen (code points, colours excluded). */
export function visibleWidth(text: string): number {
  let n = 0;
  for (const _ of text.replace(SGR, '')) n += 1;
  return n;
}

/**
 * How a table's columns give way on a narrow terminal. Columns named nowhere keep their width
 * (identifiers, amounts, counts): they are never cut or wrapped.
 */
export interface TableLayout {
  /** Columns whose text wraps at spaces, down to 8 columns or their longest word (never cut). */
  wrap?: readonly string[];
  /** Columns moved to a line of their own under each row when the table is too wide. */
  below?: readonly string[];
  /** Columns left out, in this order, when it is still too wide; a line says which. */
  drop?: readonly string[];
}

/** Spaces between two columns. */
const GAP = 2;
/** No wrapped column is made narrower than this. */
const MIN_WRAP = 8;
/** A column that may move below its rows stays in the table only this wide or wider. */
const BELOW_MIN = 24;

/** A table as a pipe gets it: a header line, then one line per row, cells separated by tabs. */
export function tsvTable(head: readonly string[], rows: readonly string[][]): string {
  const cell = (text: string) => text.replace(SGR, '');
  return [head, ...rows].map((r) => r.map(cell).join('\t')).join('\n');
}

/** Which columns a terminal of `width` shows, how wide, and which go below or are dropped. */
interface Plan {
  shown: number[];
  widths: number[];
  below: number[];
  dropped: number[];
}

/**
 * Plans the columns for a terminal of `width`. Each step is tried in turn until the table
 * fits with every wrapping column whole and each column that may move below at least
 * BELOW_MIN wide: as it is, with those columns moved below their rows, then without each
 * droppable column. When none fits so, the last is taken and its wrapping columns are
 * narrowed, the widest first, down to MIN_WRAP.
 */
function plan(
  head: readonly string[],
  rows: readonly string[][],
  layout: TableLayout,
  width: number,
): Plan {
  const natural = head.map((h, i) =>
    Math.max(visibleWidth(h), ...rows.map((r) => visibleWidth(r[i] ?? ''))),
  );
  const named = (names: readonly string[] | undefined) =>
    (names ?? []).map((n) => head.indexOf(n)).filter((i) => i >= 0);
  const wraps = new Set(named(layout.wrap));
  const belowable = named(layout.below);
  const empty = (i: number) => rows.every((r) => (r[i] ?? '').replace(SGR, '') === '');
  const total = (shown: number[], w: (i: number) => number) =>
    shown.reduce((sum, i) => sum + w(i), 0) + GAP * Math.max(0, shown.length - 1);
  const comfortable = (i: number) =>
    belowable.includes(i) ? Math.min(natural[i]!, BELOW_MIN) : natural[i]!;
  let shown = head.map((_, i) => i).filter((i) => !empty(i));
  const steps = [belowable, ...named(layout.drop).map((i) => [i])];
  const moved: number[][] = [];
  for (const step of steps) {
    if (total(shown, comfortable) <= width) break;
    moved.push(step.filter((i) => shown.includes(i)));
    shown = shown.filter((i) => !step.includes(i));
  }
  const fitsComfortably = total(shown, comfortable) <= width;
  const widths = [...natural];
  // A wrapping column never gets narrower than its longest word: a URL, an identifier or a
  // path is never split over lines, even when the table must then be wider than the screen.
  const longestWord = (i: number) =>
    Math.max(0, ...rows.flatMap((r) => (r[i] ?? '').replace(SGR, '').split(' ').map(visibleWidth)));
  const floor = (i: number) =>
    fitsComfortably
      ? comfortable(i)
      : wraps.has(i)
        ? Math.min(natural[i]!, Math.max(MIN_WRAP, longestWord(i)))
        : natural[i]!;
  while (total(shown, (i) => widths[i]!) > width) {
    const widest = shown
      .filter((i) => wraps.has(i) && widths[i]! > floor(i))
      .sort((a, b) => widths[b]! - widths[a]!)[0];
    if (widest === undefined) break;
    widths[widest]! -= 1;
  }
  const [below = [], ...dropped] = moved;
  return { shown, widths, below: below.filter((i) => !empty(i)), dropped: dropped.flat() };
}

/** Text broken into lines of at most `width` columns, at spaces where it can be; colours dropped. */
export function wrapText(text: string, width: number): string[] {
  if (visibleWidth(text) <= width) return [text];
  const lines: string[] = [];
  let line: string[] = [];
  for (const word of text.replace(SGR, '').split(' ')) {
    let rest = [...word];
    if (line.length > 0 && line.length + 1 + rest.length <= width) {
      line.push(' ', ...rest);
      continue;
    }
    if (line.length > 0) lines.push(line.join(''));
    // A word wider than the column is broken where the column ends.
    while (rest.length > width) {
      lines.push(rest.slice(0, width).join(''));
      rest = rest.slice(width);
    }
    line = rest;
  }
  lines.push(line.join(''));
  return lines;
}

/** Pads a cell to `width` screen columns. */
function pad(text: string, width: number): string {
  return text + ' '.repeat(Math.max(0, width - visibleWidth(text)));
}

/**
 * A table for a terminal `width` columns wide, as gh draws one: no box, two spaces between
 * columns, the header in bold. Identifiers and amounts are never cut: what does not fit wraps,
 * moves under its row, or is left out with a line saying so (see TableLayout).
 */
export function terminalTable(
  head: readonly string[],
  rows: readonly string[][],
  layout: TableLayout & { width: number; bold: (text: string) => string },
): string {
  const { shown, widths, below, dropped } = plan(head, rows, layout, layout.width);
  const line = (cells: string[]) =>
    cells
      .map((c, k) => (k === cells.length - 1 ? c : pad(c, widths[shown[k]!]!)))
      .join(' '.repeat(GAP))
      .trimEnd();
  const out = [line(shown.map((i) => layout.bold(head[i]!)))];
  for (const row of rows) {
    const cells = shown.map((i) => wrapText(row[i] ?? '', widths[i]!));
    const height = Math.max(...cells.map((c) => c.length));
    for (let k = 0; k < height; k++) out.push(line(cells.map((c) => c[k] ?? '')));
    for (const i of below) {
      const text = row[i] ?? '';
      if (text.replace(SGR, '') === '') continue;
      const label = `  ${head[i]}: `;
      const wrapped = wrapText(text, Math.max(MIN_WRAP, layout.width - label.length));
      out.push(...wrapped.map((l, k) => `${k === 0 ? label : ' '.repeat(label.length)}${l}`));
    }
  }
  if (dropped.length) {
    const names = dropped.map((i) => head[i]).join(', ');
    out.push(...wrapText(`(not shown at this width: ${names}; see --json)`, layout.width));
  }
  return out.join('\n');
}

/** A time as tables show it, to the minute in UTC: "2026-11-24 23:07"; --json has it whole. */
export function shortTime(time: Date | string): string {
  const d = typeof time === 'string' ? new Date(time) : time;
  if (Number.isNaN(d.getTime())) return String(time);
  return d.toISOString().slice(0, 16).replace('T', ' ');
}
