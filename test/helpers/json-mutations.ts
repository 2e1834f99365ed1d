import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { RECORD_FIELDS } from '../../src/core/status/document.js';
import { validatorOf } from './json-schema.js';
import { python3 } from './terminal.js';

/**
 * Mechanical mistakes written into valid --json documents, which the schemas of docs/schema/
 * must refuse (issue 50): a schema that accepts anything protects no script. Driven by the
 * documents themselves, so a new command's documents are held to it without a word here,
 * unless the docs let one of its keys be absent (MAY_BE_ABSENT).
 */

/** Where a value sits in a document: keys and indices from the root. */
export type Path = Array<string | number>;

/** The kinds of mistake. */
export const MUTATION_KINDS = [
  'key dropped',
  'wrong type',
  'list as string',
  'misspelt',
  'exit code out of the enum',
  'currency key',
] as const;

/** A kind of mistake. */
export type MutationKind = (typeof MUTATION_KINDS)[number];

/** One mistake: the value at `path` dropped, replaced by `value`, or its key renamed to `key`. */
export interface Mutation {
  path: Path;
  kind: MutationKind;
  op: 'drop' | 'set' | 'rename';
  value?: unknown;
  key?: string;
  /**
   * A null given each other type: the docs give a value one type besides null, so at most
   * one mutation of the group may be accepted.
   */
  group?: string;
}

/** Keys whose values the docs enumerate (statuses, states, outcomes...): a misspelt value is refused. */
export const ENUMERATED_KEYS: ReadonlySet<string> = new Set([
  'command',
  'status',
  'state',
  'outcome',
  'decision',
  'relation',
  'matched_by',
  'change',
  'source',
  'secret_in',
  'shell',
  'format',
  'encoding',
  'kind',
  'retry_of_state',
  'key',
]);

/**
 * The keys docs/json.md lets be absent, by the `command` of the document, as paths ("[]" for
 * any item of a list). Every other key a document has must be required by its schema.
 */
export const MAY_BE_ABSENT: Readonly<Record<string, readonly string[]>> = {
  send: [
    // Absent when the run stopped before its summary.
    'approval_status',
    // Only when an approved prepared run let the run send.
    'approval',
    // Only when the summary compared the run with its series' last run or a retry's original.
    'compared_with',
    'retry_changes',
    // The request body as it is sent: the interface's optional fields (its part 2).
    'first_request.batch_reference',
    'first_request.webhook_url',
    'first_request.payouts[].description',
  ],
  // Only for a failed or canceled payout the history knows.
  status: ['results[].history'],
};

/**
 * Objects of the service's making, open to fields the docs do not name, by path: only the
 * listed keys (the interface's fields of a payout record) are promised.
 */
export const PROMISED_KEYS: Readonly<Record<string, readonly string[]>> = {
  'results[].record': RECORD_FIELDS,
};

/** A key that is data, not a field's name: a currency code in a map of totals or charges. */
const CURRENCY_KEY = /^[A-Z]{3}$/;

/** What a null is replaced by: one of every other type. */
const NOT_NULL: readonly unknown[] = ['x', 7, true, {}, []];

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A value misspelt: a doubled letter halved ("success" -> "sucess"), else its last letter dropped. */
export function misspelt(value: string): string {
  const doubled = /(.)\1/.exec(value);
  if (doubled) return value.slice(0, doubled.index) + value.slice(doubled.index + 1);
  return value.length > 1 ? value.slice(0, -1) : `${value}x`;
}

/** The mistakes of one value, whatever holds it (`key`: its key, undefined for a list's item). */
function valueMutations(v: unknown, path: Path, key: string | undefined, out: Mutation[]): void {
  const set = (kind: MutationKind, value: unknown, group?: string) =>
    out.push({ path, kind, op: 'set', value, ...(group ? { group } : {}) });
  if (typeof v === 'string') {
    set('wrong type', 7);
    if (key !== undefined && ENUMERATED_KEYS.has(key)) set('misspelt', misspelt(v));
  } else if (typeof v === 'number') {
    if (key === 'exit_code') set('exit code out of the enum', 12);
    set('wrong type', String(v));
  } else if (typeof v === 'boolean') set('wrong type', String(v));
  else if (v === null) for (const other of NOT_NULL) set('wrong type', other, pathText(path));
  else if (Array.isArray(v)) set('list as string', 'none');
  else set('wrong type', 'none');
}

/** Walks a document, adding the mistakes of every key and value below `value`. */
function collect(
  value: unknown,
  at: { path: Path; pattern: string },
  optional: ReadonlySet<string>,
  out: Mutation[],
): void {
  if (Array.isArray(value)) {
    value.forEach((item, i) => {
      const next = { path: [...at.path, i], pattern: `${at.pattern}[]` };
      valueMutations(item, next.path, undefined, out);
      collect(item, next, optional, out);
    });
    return;
  }
  if (!isObject(value)) return;
  const promised = PROMISED_KEYS[at.pattern];
  for (const [k, v] of Object.entries(value)) {
    if (promised && !promised.includes(k)) continue;
    const path = [...at.path, k];
    const pattern = at.pattern ? `${at.pattern}.${k}` : k;
    if (CURRENCY_KEY.test(k))
      out.push({ path, kind: 'currency key', op: 'rename', key: k.toLowerCase() });
    else if (!optional.has(pattern)) out.push({ path, kind: 'key dropped', op: 'drop' });
    valueMutations(v, path, k, out);
    collect(v, { path, pattern }, optional, out);
  }
}

/** Every mistake of a document whose `command` is `command`. */
export function mutationsOf(doc: unknown, command: string | null): Mutation[] {
  const out: Mutation[] = [];
  collect(doc, { path: [], pattern: '' }, new Set(MAY_BE_ABSENT[command ?? ''] ?? []), out);
  return out;
}

/** A path as text: "results[2].status". */
export function pathText(path: Path): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join('');
}

/**
 * The shape of a value, as far as a schema may tell values apart: types, keys, the values of
 * enumerated keys and exit codes (the schemas' conditions read them), and the distinct shapes
 * of a list's items.
 */
function shape(v: unknown, key?: string): string {
  if (typeof v === 'string')
    return key !== undefined && ENUMERATED_KEYS.has(key) ? JSON.stringify(v) : 's';
  if (typeof v === 'number') return key === 'exit_code' ? String(v) : 'n';
  if (typeof v === 'boolean' || v === null) return String(v);
  if (Array.isArray(v)) return `[${[...new Set(v.map((x) => shape(x)))].sort().join(',')}]`;
  const entries = Object.entries(v as Record<string, unknown>);
  return `{${entries.map(([k, x]) => `${CURRENCY_KEY.test(k) ? 'CUR' : k}:${shape(x, k)}`).join(',')}}`;
}

/** A document reduced to its shapes: each list keeps the first item of each distinct shape. */
function reduced(v: unknown): unknown {
  if (Array.isArray(v)) {
    const seen = new Set<string>();
    return v.filter((x) => !seen.has(shape(x)) && seen.add(shape(x))).map(reduced);
  }
  if (!isObject(v)) return v;
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, reduced(x)]));
}

/** A document and the schema file its `command` names. */
export interface SchemaDocument {
  file: string;
  doc: unknown;
}

/**
 * The distinct shapes among documents: each reduced (see reduced), one kept of each schema file
 * and shape. Mutating these reaches every key of every shape at a fraction of the cost.
 */
export function distinctShapes<T extends SchemaDocument>(docs: readonly T[]): T[] {
  const kept = new Map<string, T>();
  for (const d of docs) {
    const doc = reduced(d.doc);
    const key = `${d.file} ${shape(doc)}`;
    if (!kept.has(key)) kept.set(key, { ...d, doc });
  }
  return [...kept.values()];
}

/**
 * Of each document's mutations, those of a kind not met before: one per schema file, key path
 * (any item of a list), kind and value. What a slower validator is given.
 */
export function firstOfEachKind<T extends SchemaDocument & { mutations: readonly Mutation[] }>(
  docs: readonly T[],
): T[] {
  const met = new Set<string>();
  return docs.map((d) => ({
    ...d,
    mutations: d.mutations.filter((m) => {
      const at = m.path.map((p) => (typeof p === 'number' ? '[]' : p)).join('.');
      const key = `${d.file} ${at} ${m.kind} ${JSON.stringify(m.value ?? m.key ?? null)}`;
      return !met.has(key) && Boolean(met.add(key));
    }),
  }));
}

/** Applies a mutation in place; returns what undoes it. */
function apply(doc: unknown, m: Mutation): () => void {
  let node = doc as Record<string | number, unknown>;
  for (const step of m.path.slice(0, -1)) node = node[step] as Record<string | number, unknown>;
  const last = m.path.at(-1)!;
  const old = node[last];
  if (m.op === 'set') {
    node[last] = m.value;
    return () => {
      node[last] = old;
    };
  }
  delete node[last];
  if (m.op === 'rename') node[m.key!] = old;
  return () => {
    if (m.op === 'rename') delete node[m.key!];
    node[last] = old;
  };
}

/** The indices of the mutations of `doc` that ajv accepts against the schema file. */
export function acceptedByAjv(
  file: string,
  doc: unknown,
  mutations: readonly Mutation[],
): number[] {
  const validate = validatorOf(file);
  const accepted: number[] = [];
  mutations.forEach((m, i) => {
    const undo = apply(doc, m);
    try {
      if (validate(doc)) accepted.push(i);
    } finally {
      undo();
    }
  });
  return accepted;
}

/** What python-jsonschema said of each document and its mutations (json-schema-check.py). */
export interface PythonVerdict {
  versions: Record<string, string>;
  schema_errors: string[];
  docs: Array<{ error: string | null; accepted: number[] }>;
}

const CHECKER = fileURLToPath(new URL('./json-schema-check.py', import.meta.url));
const SCHEMA_DIR = fileURLToPath(new URL('../../docs/schema/', import.meta.url));

/** Why python-jsonschema cannot be used here, or undefined when it can. */
export function pythonJsonschemaMissing(): string | undefined {
  try {
    const r = spawnSync(python3(), ['-c', 'import jsonschema, referencing'], { encoding: 'utf8' });
    return r.status === 0
      ? undefined
      : `python3 has no jsonschema: ${r.stderr.trim().split('\n').at(-1)}`;
  } catch (err) {
    return `no python3: ${(err as Error).message}`;
  }
}

/** Checks documents and their mutations with python-jsonschema, in one process. */
export function checkWithPython(
  items: ReadonlyArray<SchemaDocument & { mutations: readonly Mutation[] }>,
): PythonVerdict {
  const input = JSON.stringify({
    docs: items.map(({ file, doc, mutations }) => ({ file, doc, mutations })),
  });
  const r = spawnSync(python3(), [CHECKER, SCHEMA_DIR], {
    input,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.status !== 0) throw new Error(`json-schema-check.py failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout) as PythonVerdict;
}
