/** A colour sequence, which takes no room on the screen. */
const SGR = /\u001b\[[0-9;]*m/g;

/** How many columns a cell takes on the screen (code points, colours excluded). */
export function visibleWidth(text: string): number {
  let n = 0;
  for (const _ of text.replace(SGR, '')) n += 1;
  return n;
}

/** A cell cut to `width` columns, its end replaced by "…"; colours are dropped from a cut cell. */
function shorten(cell: string, width: number): string {
  if (visibleWidth(cell) <= width) return cell;
  return `${[...cell.replace(SGR, '')].slice(0, Math.max(0, width - 1)).join('')}…`;
}

/** What fitting a table to a terminal needs. */
export interface FitOptions {
  /** The terminal's width in columns. */
  width: number;
  /** Headings of the columns that may be shortened, widest first when the table is too wide. */
  shrink: readonly string[];
}

/** Room a column takes beyond its text in cli-table3's layout: padding and one border. */
const COLUMN_CHROME = 3;
/** No column is shortened below this width. */
const MIN_WIDTH = 8;

/**
 * Fits a table to a terminal, as gh does: a column empty in every row is left out, and the
 * widest shrinkable columns are cut with "…" until the table fits (or they reach their minimum).
 */
export function fitTable(
  head: string[],
  rows: string[][],
  opts: FitOptions,
): { head: string[]; rows: string[][] } {
  const keep = head.map((_, i) => rows.some((r) => (r[i] ?? '').replace(SGR, '') !== ''));
  const h = head.filter((_, i) => keep[i]);
  let body = rows.map((r) => r.filter((_, i) => keep[i]));
  const widths = h.map((title, i) =>
    Math.max(visibleWidth(title), ...body.map((r) => visibleWidth(r[i] ?? ''))),
  );
  const total = () => widths.reduce((sum, w) => sum + w + COLUMN_CHROME, 1);
  const shrinkable = h
    .map((_, i) => ({ i, min: MIN_WIDTH }))
    .filter(({ i }) => opts.shrink.includes(h[i]!));
  while (total() > opts.width) {
    const widest = shrinkable
      .filter(({ i, min }) => widths[i]! > min)
      .sort((a, b) => widths[b.i]! - widths[a.i]!)[0];
    if (!widest) break;
    widths[widest.i]! -= 1;
  }
  body = body.map((r) => r.map((cell, i) => shorten(cell, widths[i]!)));
  return { head: h.map((title, i) => shorten(title, widths[i]!)), rows: body };
}
