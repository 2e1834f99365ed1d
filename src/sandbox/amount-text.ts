/**
 * Recovers the decimal text of each `payouts[i].amount` from a create request body.
 * JSON.parse turns "100.001" and "0.1000000000000000001" into doubles that may hide
 * decimals; the decimal rule must judge the digits the caller actually wrote. Node 20's
 * JSON.parse gives revivers no source text, so this small scanner walks the body once.
 */

/** One open container while scanning: an object with its current key, or an array. */
type Frame =
  | { kind: 'object'; key: string | undefined; expectKey: boolean }
  | { kind: 'array'; index: number };

/** Finds the index of the quote that closes the string opening at `start`. */
function stringEnd(text: string, start: number): number {
  let j = start + 1;
  while (j < text.length) {
    const c = text.charCodeAt(j);
    if (c === 0x5c) j += 2;
    else if (c === 0x22) return j;
    else j += 1;
  }
  return text.length;
}

/** Decodes a JSON string token, skipping JSON.parse when it holds no escapes. */
function decodeString(raw: string): string {
  return raw.includes('\\') ? (JSON.parse(raw) as string) : raw.slice(1, -1);
}

/** Whether the open containers are exactly root object -> "payouts" -> array -> "amount". */
function atPayoutAmount(stack: Frame[]): number | undefined {
  if (stack.length !== 3) return undefined;
  const [root, list, item] = stack;
  if (root?.kind !== 'object' || root.key !== 'payouts') return undefined;
  if (list?.kind !== 'array' || item?.kind !== 'object' || item.key !== 'amount') return undefined;
  return list.index;
}

/**
 * Maps the index of each payout to its amount's number text. The body must be JSON that
 * JSON.parse accepted: the scanner does no error checking of its own. Duplicate keys
 * resolve like JSON.parse (the last one wins).
 */
export function payoutAmountTexts(body: string): Map<number, string> {
  const out = new Map<number, string>();
  const stack: Frame[] = [];
  let i = 0;
  while (i < body.length) {
    const ch = body[i] as string;
    const top = stack[stack.length - 1];
    if (ch === '"') {
      const end = stringEnd(body, i);
      if (top?.kind === 'object' && top.expectKey) {
        top.key = decodeString(body.slice(i, end + 1));
        top.expectKey = false;
        // A repeated "payouts" key replaces the earlier array, as in JSON.parse.
        if (stack.length === 1 && top.key === 'payouts') out.clear();
      }
      i = end + 1;
    } else if (ch === '{') {
      stack.push({ kind: 'object', key: undefined, expectKey: true });
      i += 1;
    } else if (ch === '[') {
      stack.push({ kind: 'array', index: 0 });
      i += 1;
    } else if (ch === '}' || ch === ']') {
      stack.pop();
      i += 1;
    } else if (ch === ',') {
      if (top?.kind === 'object') top.expectKey = true;
      else if (top?.kind === 'array') top.index += 1;
      i += 1;
    } else if (ch === '-' || (ch >= '0' && ch <= '9')) {
      let j = i + 1;
      while (j < body.length && /[0-9eE.+-]/.test(body[j] as string)) j += 1;
      const index = atPayoutAmount(stack);
      if (index !== undefined) out.set(index, body.slice(i, j));
      i = j;
    } else {
      // Whitespace, ':' and the letters of true/false/null.
      i += 1;
    }
  }
  return out;
}
