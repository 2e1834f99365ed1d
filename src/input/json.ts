/** Readers of JSON (an array, or a create request) and NDJSON (one payout per line) files. */
import { constants } from 'node:buffer';
import { isHttpUrl } from '../api/base-url.js';
import { readChunks } from './chunks.js';
import type { InputEncoding } from './encoding.js';
import type { PayoutChecker } from './fields.js';
import {
  JsonNumber,
  type JsonObject,
  JsonReader,
  JsonSyntaxError,
  type JsonValue,
  lineColumn,
  parseJson,
} from './json-text.js';
import { type FileMeta, type InputSource, type IntakeSink, PAYOUT_FIELDS } from './types.js';

const KNOWN_KEYS = new Set<string>(PAYOUT_FIELDS);
const DIGITS = /^\d+$/;
const LISTED_KEYS = 12;

/** Keys of payout objects that are not payout fields, gathered for one warning per file. */
class UnknownKeys {
  private readonly keys = new Set<string>();

  /** Notes the keys of an object that are not payout fields. */
  collect(obj: JsonObject): void {
    for (const key in obj) {
      if (!KNOWN_KEYS.has(key) && this.keys.size <= LISTED_KEYS) this.keys.add(key);
    }
  }

  /** Warns once about every unknown key seen. */
  warn(file: string, sink: IntakeSink): void {
    if (this.keys.size === 0) return;
    const names = [...this.keys].slice(0, LISTED_KEYS).map((k) => JSON.stringify(k));
    if (this.keys.size > LISTED_KEYS) names.push('and more');
    sink.warning(
      `${file}: ignoring key${this.keys.size === 1 ? '' : 's'} ${names.join(', ')} in payouts: only ${PAYOUT_FIELDS.join(', ')} are read`,
    );
  }
}

/** How a JSON value is shown in a message. */
function show(v: JsonValue): string | undefined {
  if (v instanceof JsonNumber) return v.text;
  if (typeof v === 'string') return v;
  if (v === null || typeof v === 'boolean') return String(v);
  return undefined;
}

function kindOf(v: JsonValue): string {
  if (v === null) return 'null';
  if (v instanceof JsonNumber) return 'a number';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  return typeof v === 'boolean' ? 'true or false' : 'a string';
}

/**
 * Reads one field of a payout object as text: missing and null read as '' (the checker
 * then says it is missing); other non-strings are reported here and read as null.
 */
function textField(
  obj: JsonObject,
  field: 'reference_id' | 'amount' | 'currency' | 'recipient',
  location: string,
  checker: PayoutChecker,
): string | null {
  const v = obj[field];
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v;
  if (v instanceof JsonNumber) {
    // Amounts may be numbers: their text as written is the amount, never a rounded double.
    if (field === 'amount') return v.text;
    // A whole-number reference (1001) is taken as its digits, as exporters often write
    // numeric ids unquoted; 1e3 or 10.50 are refused, since their text is ambiguous.
    if (field === 'reference_id' && DIGITS.test(v.text)) return v.text;
  }
  const example = field === 'amount' ? '"12.50" or 12.50' : '"..."';
  checker.report(
    location,
    field,
    show(v),
    `must be a string, not ${kindOf(v)}: write it as ${example}`,
  );
  return null;
}

/** Checks one element of a payouts array (or one NDJSON line's value). */
function checkItem(
  v: JsonValue,
  location: string,
  checker: PayoutChecker,
  unknown: UnknownKeys,
): void {
  if (v === null || typeof v !== 'object' || Array.isArray(v) || v instanceof JsonNumber) {
    checker.report(
      location,
      undefined,
      undefined,
      `is ${kindOf(v)}, not a payout: write an object such as {"reference_id": "payout-0001", "amount": "12.50", "currency": "USD", "recipient": "jane@example.com"}`,
    );
    return;
  }
  unknown.collect(v);
  checker.check(
    location,
    textField(v, 'reference_id', location, checker),
    textField(v, 'amount', location, checker),
    textField(v, 'currency', location, checker),
    textField(v, 'recipient', location, checker),
    descriptionField(v, location, checker),
  );
}

/** Reads the optional description: absent or null is none; a non-string is reported (null). */
function descriptionField(
  obj: JsonObject,
  location: string,
  checker: PayoutChecker,
): string | null | undefined {
  const d = obj.description;
  if (d === undefined || d === null) return undefined;
  if (typeof d === 'string') return d;
  checker.report(location, 'description', show(d), `must be a string, not ${kindOf(d)}`);
  return null;
}

/** Describes a JSON syntax error at its line and column. */
function syntaxLocation(text: string, err: JsonSyntaxError): { location: string; message: string } {
  const { line, column } = lineColumn(text, err.offset);
  return {
    location: `line ${line}, column ${column}`,
    message: `is not valid JSON: ${err.message}: check the commas, quotes and brackets around there`,
  };
}

/** Reads the top-level value of a JSON payout file, checking each payout, into `meta`. */
function readJsonText(
  text: string,
  checker: PayoutChecker,
  sink: IntakeSink,
  file: string,
  meta: FileMeta,
): void {
  const r = new JsonReader(text);
  const unknown = new UnknownKeys();
  const each = (v: JsonValue, index: number): void => {
    meta.rows++;
    checkItem(v, `item ${index + 1}`, checker, unknown);
  };
  const first = r.peek();
  if (first === '') {
    checker.report(undefined, undefined, undefined, 'no payouts in this file');
    return;
  }
  let readList = false;
  if (first === '[') {
    readList = true;
    r.eachItem(each);
  } else if (first === '{') {
    let sawPayouts = false;
    const otherKeys: string[] = [];
    r.eachMember((key) => {
      if (key === 'payouts') {
        sawPayouts = true;
        if (r.peek() === '[') {
          readList = true;
          r.eachItem(each);
        } else {
          const v = r.value();
          checker.report(
            undefined,
            'payouts',
            show(v),
            `must be an array of payout objects, not ${kindOf(v)}`,
          );
        }
      } else if (key === 'batch_reference' || key === 'webhook_url') {
        const v = r.value();
        if (typeof v === 'string') meta[key] = v;
        else if (v !== null)
          checker.report(undefined, key, show(v), `must be a string, not ${kindOf(v)}`);
      } else {
        r.value();
        otherKeys.push(JSON.stringify(key));
      }
    });
    if (!sawPayouts) {
      checker.report(
        undefined,
        undefined,
        undefined,
        'has no "payouts" array: write either an array of payouts or an object {"payouts": [...]}',
      );
    }
    if (otherKeys.length > 0) {
      sink.warning(
        `${file}: ignoring top-level key${otherKeys.length === 1 ? '' : 's'} ${otherKeys.join(', ')}: only payouts, batch_reference and webhook_url are read`,
      );
    }
  } else {
    r.value();
    checker.report(
      undefined,
      undefined,
      undefined,
      'must hold an array of payouts or an object {"payouts": [...]}',
    );
  }
  r.expectEnd();
  unknown.warn(file, sink);
  if (readList && meta.rows === 0) {
    checker.report(undefined, undefined, undefined, 'no payouts in this file');
  }
}

/** Checks that a webhook URL given in a file is an http(s) URL. */
function checkWebhook(meta: FileMeta, checker: PayoutChecker): void {
  const url = meta.webhook_url;
  if (url === undefined) return;
  if (!isHttpUrl(url)) {
    checker.report(
      undefined,
      'webhook_url',
      url,
      'must be an http or https URL, such as https://example.com/hooks/payouts',
    );
  }
}

/** Reads a JSON source whole (decoded to UTF-8 first) and checks each payout in it. */
export async function readJson(
  source: InputSource,
  checker: PayoutChecker,
  sink: IntakeSink,
  encoding: InputEncoding | undefined,
): Promise<FileMeta> {
  const meta: FileMeta = { rows: 0 };
  const chunks: Buffer[] = [];
  let bytes = 0;
  const fail = (location: string | undefined, message: string): void =>
    checker.report(location, undefined, undefined, message);
  const outcome = await readChunks(source, { csv: false, encoding, fail }, (chunk) => {
    bytes += chunk.length;
    chunks.push(chunk);
    return bytes <= constants.MAX_STRING_LENGTH;
  });
  if (outcome === 'failed') return meta;
  if (outcome === 'stopped') {
    fail(
      undefined,
      'is too large to read as one JSON document: write the payouts as NDJSON or CSV instead',
    );
    return meta;
  }
  let text = Buffer.concat(chunks, bytes).toString('utf8');
  chunks.length = 0;
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  try {
    readJsonText(text, checker, sink, source.name, meta);
  } catch (err) {
    if (!(err instanceof JsonSyntaxError)) throw err;
    const { location, message } = syntaxLocation(text, err);
    fail(location, message);
  }
  checkWebhook(meta, checker);
  return meta;
}

/** Reads an NDJSON source line by line and checks each payout in it. */
export async function readNdjson(
  source: InputSource,
  checker: PayoutChecker,
  sink: IntakeSink,
  encoding: InputEncoding | undefined,
): Promise<FileMeta> {
  const meta: FileMeta = { rows: 0 };
  const unknown = new UnknownKeys();
  let line = 0;
  let carry: Buffer[] = [];

  const handle = (raw: string): void => {
    line++;
    let text = raw;
    if (line === 1 && text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    if (text.trim() === '') return;
    meta.rows++;
    const location = `line ${line}`;
    let value: JsonValue;
    try {
      value = parseJson(text);
    } catch (err) {
      if (!(err instanceof JsonSyntaxError)) throw err;
      checker.report(
        location,
        undefined,
        undefined,
        `is not valid JSON at column ${err.offset + 1}: ${err.message}: write one JSON object per line`,
      );
      return;
    }
    checkItem(value, location, checker, unknown);
  };

  const fail = (location: string | undefined, message: string): void =>
    checker.report(location, undefined, undefined, message);
  const outcome = await readChunks(
    source,
    { csv: false, encoding, fail, ready: sink.ready?.bind(sink) },
    (chunk) => {
      let start = 0;
      for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
        const end = nl > start && chunk[nl - 1] === 13 ? nl - 1 : nl;
        if (carry.length === 0) handle(chunk.toString('utf8', start, end));
        else {
          carry.push(chunk.subarray(start, nl));
          const joined = Buffer.concat(carry);
          carry = [];
          const stop =
            joined.length > 0 && joined[joined.length - 1] === 13
              ? joined.length - 1
              : joined.length;
          handle(joined.toString('utf8', 0, stop));
        }
        start = nl + 1;
      }
      // Copied: a view would keep the whole chunk alive.
      if (start < chunk.length) carry.push(Buffer.from(chunk.subarray(start)));
      return true;
    },
  );
  if (outcome !== 'done') return meta;
  if (carry.length > 0) {
    const joined = Buffer.concat(carry);
    handle(
      joined.toString(
        'utf8',
        0,
        joined[joined.length - 1] === 13 ? joined.length - 1 : joined.length,
      ),
    );
  }
  unknown.warn(source.name, sink);
  if (meta.rows === 0) fail(undefined, 'no payouts in this file');
  return meta;
}
