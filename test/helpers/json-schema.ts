import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import type { Command } from 'commander';
import { commandPathIn, commandPathOf } from '../../src/commands/command.js';
import { buildProgram } from '../../src/main.js';

/** docs/schema/, where every command's --json document has its JSON Schema. */
const SCHEMA_DIR = new URL('../../docs/schema/', import.meta.url);

/**
 * `command` values whose document has a schema file of another name; any other "a b" has
 * docs/schema/a-b.schema.json (docs/json.md lists them).
 */
const SHARED_SCHEMAS: Record<string, string> = {
  'approvals require': 'approvals.schema.json',
  'approvals off': 'approvals.schema.json',
  'approvals show': 'approvals.schema.json',
  approve: 'prepared-run.schema.json',
  'send prepare': 'prepared-run.schema.json',
};

/** The schema file of a command's document, such as "runs-show.schema.json". */
export function schemaFileOf(command: string): string {
  return SHARED_SCHEMAS[command] ?? `${command.replaceAll(' ', '-')}.schema.json`;
}

/** Whether docs/schema/ holds the schema of a command's document. */
export function hasSchema(command: string): boolean {
  return existsSync(new URL(schemaFileOf(command), SCHEMA_DIR));
}

/** The command tree, built once to read which command an argv runs. */
let tree: Command | undefined;
export function commandTree(): Command {
  tree ??= buildProgram(
    {
      env: {},
      stdin: new PassThrough(),
      stdout: new PassThrough(),
      stderr: new PassThrough(),
      cwd: '/',
      pid: 1,
      version: '0.0.0-test',
      interrupt: new AbortController().signal,
    },
    () => {},
  );
  return tree;
}

/** Every leaf command of the tree, as its path ("runs show"). */
export function leafCommands(cmd: Command = commandTree()): string[] {
  if (cmd.commands.length === 0) return [commandPathOf(cmd)];
  return cmd.commands.flatMap((c) => leafCommands(c));
}

/** Every `command` value a document may have: each leaf command's, and "send prepare". */
export function commandValues(): string[] {
  return [...leafCommands(), 'send prepare'];
}

/** The command `argv` runs, as its document's `command` names it ("runs list"). */
export function commandPath(argv: readonly string[]): string | undefined {
  return commandPathIn(commandTree(), argv);
}

/** A schema file as parsed. */
type SchemaFile = { $id?: string; [key: string]: unknown };

/** Every schema file of docs/schema/, by name, as parsed. */
export function schemaFiles(): Map<string, SchemaFile> {
  const files = new Map<string, SchemaFile>();
  for (const name of readdirSync(SCHEMA_DIR)
    .filter((f) => f.endsWith('.schema.json'))
    .sort()) {
    files.set(name, JSON.parse(readFileSync(new URL(name, SCHEMA_DIR), 'utf8')) as SchemaFile);
  }
  return files;
}

let ajv: Ajv2020 | undefined;
/** The $id of each schema file. */
const ids = new Map<string, string>();
/** Compiled on first use: compiling costs a few hundred milliseconds a test worker. */
const validators = new Map<string, ValidateFunction>();

/**
 * Every file of docs/schema/ in one validator, each by its $id (the $refs between them are
 * relative to it), as a consumer loads the folder: a file without an $id fails.
 */
function loaded(): Ajv2020 {
  if (ajv) return ajv;
  const a = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
  for (const [name, schema] of schemaFiles()) {
    if (typeof schema.$id !== 'string') throw new Error(`docs/schema/${name} has no $id`);
    a.addSchema(schema);
    ids.set(name, schema.$id);
  }
  ajv = a;
  return a;
}

/** The validator of a schema file. */
export function validatorOf(file: string): ValidateFunction {
  let validate = validators.get(file);
  if (!validate) {
    const id = loaded() && ids.get(file);
    validate = id === undefined ? undefined : loaded().getSchema(id);
    if (!validate) throw new Error(`no schema docs/schema/${file}`);
    validators.set(file, validate);
  }
  return validate;
}

/** Why `doc` does not match the schema file, or undefined when it does. */
export function schemaErrors(file: string, doc: unknown): string | undefined {
  const validate = validatorOf(file);
  if (validate(doc)) return undefined;
  return loaded().errorsText(validate.errors, { separator: '\n' });
}

/** A document, as far as the checks below read it. */
interface Doc {
  command?: unknown;
  exit_code?: unknown;
  error?: { exit_code?: unknown } | null;
}

/**
 * The `command` the document of `argv` names: the command's path, but for a prepared run that
 * `send --prepare` printed ("send prepare": one command value per shape of document).
 */
function expectedCommand(argv: readonly string[], code: number): string | null {
  const command = commandPath(argv) ?? null;
  return command === 'send' && argv.includes('--prepare') && code === 0 ? 'send prepare' : command;
}

/** A document checkJsonDocument found valid, and the schema file its `command` names. */
export interface CheckedDocument {
  argv: readonly string[];
  code: number;
  file: string;
  doc: unknown;
}

let recording: CheckedDocument[] | undefined;

/**
 * Keeps every document checked from now on in this worker, until stop() (the mutation test of
 * test/inprocess/json-documents.test.ts mutates them).
 */
export function recordDocuments(): { documents: CheckedDocument[]; stop(): void } {
  const documents: CheckedDocument[] = [];
  recording = documents;
  return {
    documents,
    stop: () => {
      if (recording === documents) recording = undefined;
    },
  };
}

/**
 * Checks the stdout of a run under --json: exactly one document, naming the command argv runs
 * (see expectedCommand), valid against the schema that `command` names (docs/schema/; null:
 * error.schema.json; a command without one fails), and saying the run's exit code: its
 * `exit_code`, else its error's (0 without one). Throws, failing the test, when it does not.
 * Runs that only print help or the version, and runs killed by a signal, are not checked.
 */
export function checkJsonDocument(
  argv: readonly string[],
  run: { code: number | null; stdout: string; stderr: string },
): void {
  if (argv.includes('--json-lines') && run.code !== null) {
    checkJsonLines(argv, run);
    return;
  }
  if (!argv.includes('--json') || run.code === null) return;
  if (argv.some((a) => ['--help', '-h', '--version', '-V'].includes(a))) return;
  const where = `payouts ${argv.join(' ')} (exit ${run.code})`;
  let doc: Doc;
  try {
    doc = JSON.parse(run.stdout) as Doc;
  } catch {
    throw new Error(
      `${where}: stdout is not one JSON document:\n${run.stdout}\n--- stderr ---\n${run.stderr}`,
    );
  }
  const expected = expectedCommand(argv, run.code);
  if ((doc.command ?? null) !== expected) {
    throw new Error(`${where}: the document says command ${JSON.stringify(doc.command)}`);
  }
  const file = expected === null ? 'error.schema.json' : schemaFileOf(expected);
  if (expected !== null && !hasSchema(expected)) {
    throw new Error(`${where}: no schema for "${expected}": add docs/schema/${file}`);
  }
  const errors = schemaErrors(file, doc);
  if (errors) {
    throw new Error(`${where}: the document does not match ${file}:\n${errors}\n${run.stdout}`);
  }
  const said = 'exit_code' in doc ? doc.exit_code : (doc.error?.exit_code ?? 0);
  if (said !== run.code) {
    throw new Error(`${where}: the document says exit_code ${String(said)}`);
  }
  recording?.push({ argv, code: run.code, file, doc });
}

/** Why `doc`, a line of `where`, does not match the schema file, thrown. */
function checkLine(where: string, file: string, doc: unknown, text: string): void {
  const errors = schemaErrors(file, doc);
  if (errors) throw new Error(`${where}: a line does not match ${file}:\n${errors}\n${text}`);
}

/**
 * Checks the stdout of `send --json-lines`: one JSON value a line, result lines (valid
 * against send-line-result.schema.json) then one summary line, last (send-line-summary),
 * saying the run's exit code, and as many result lines as its counts add up to. The first
 * result line and the summary are kept for the mutation test (recordDocuments).
 */
function checkJsonLines(
  argv: readonly string[],
  run: { code: number | null; stdout: string; stderr: string },
): void {
  if (argv.some((a) => ['--help', '-h', '--version', '-V'].includes(a))) return;
  const where = `payouts ${argv.join(' ')} (exit ${run.code})`;
  if (!run.stdout.endsWith('\n'))
    throw new Error(`${where}: stdout does not end a line:\n${run.stdout}`);
  const lines = run.stdout.slice(0, -1).split('\n');
  const docs = lines.map((text) => {
    try {
      return JSON.parse(text) as Record<string, unknown>;
    } catch {
      throw new Error(
        `${where}: a line is not one JSON value:\n${text}\n--- stderr ---\n${run.stderr}`,
      );
    }
  });
  const summary = docs.pop()!;
  docs.forEach((doc, i) => {
    checkLine(where, 'send-line-result.schema.json', doc, lines[i]!);
  });
  checkLine(where, 'send-line-summary.schema.json', summary, lines[lines.length - 1]!);
  if (summary.exit_code !== run.code) {
    throw new Error(`${where}: the summary line says exit_code ${String(summary.exit_code)}`);
  }
  const counts = ['success', 'failed', 'pending', 'unknown', 'not_sent'].map(
    (k) => summary[`${k}_count`],
  );
  if (counts.every((n) => typeof n === 'number')) {
    const total = (counts as number[]).reduce((a, b) => a + b, 0);
    if (total !== docs.length) {
      throw new Error(`${where}: ${docs.length} result lines, but the counts add up to ${total}`);
    }
  }
  if (docs[0])
    recording?.push({ argv, code: run.code!, file: 'send-line-result.schema.json', doc: docs[0] });
  recording?.push({ argv, code: run.code!, file: 'send-line-summary.schema.json', doc: summary });
}
