import { readFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { commandOf } from '../../src/core/documents.js';

/** The schemas of docs/schema/, by the command whose --json document they describe. */
const SCHEMAS = ['send', 'status', 'prepared-run', 'approvals'] as const;
/** The commands whose document carries its exit code. */
const WITH_EXIT_CODE = ['send', 'status'];

const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
/** Compiled on first use: compiling costs a few hundred milliseconds a test worker. */
const validators = new Map<string, ValidateFunction>();

/** The validator of a command's document, if it has a schema. */
function validatorOf(command: string | undefined): ValidateFunction | undefined {
  if (!SCHEMAS.some((name) => name === command)) return undefined;
  let validate = validators.get(command!);
  if (!validate) {
    const url = new URL(`../../docs/schema/${command}.schema.json`, import.meta.url);
    validate = ajv.compile(JSON.parse(readFileSync(url, 'utf8')));
    validators.set(command!, validate);
  }
  return validate;
}

/** The schema a run's document follows: a prepared run has one shape wherever it is printed. */
function schemaOf(argv: readonly string[], code: number): string | undefined {
  const command = commandOf(argv);
  if (command === 'approve') return 'prepared-run';
  if (command === 'send' && argv.includes('--prepare') && code === 0) return 'prepared-run';
  const show = argv.indexOf('show');
  if (command === 'runs' && show >= 0 && /^p[0-9a-f]*$/.test(argv[show + 1] ?? '')) {
    return 'prepared-run';
  }
  return command;
}

/**
 * Checks the stdout of a `send` or `status` run under --json: exactly one document, valid
 * against its schema, whose exit_code is the run's. Throws, failing the test, when it is not.
 * Runs that only print help or the version, and runs killed by a signal, are not checked.
 */
export function checkJsonDocument(
  argv: readonly string[],
  run: { code: number | null; stdout: string; stderr: string },
): void {
  if (!argv.includes('--json') || run.code === null) return;
  if (argv.some((a) => ['--help', '-h', '--version', '-V'].includes(a))) return;
  if (commandOf(argv) === 'runs' && !argv.includes('show') && run.code === 0) {
    checkPreparedHeads(argv, run.stdout);
    return;
  }
  const validate = validatorOf(schemaOf(argv, run.code));
  if (!validate) return;
  const where = `payouts ${argv.join(' ')} (exit ${run.code})`;
  let doc: { exit_code?: unknown };
  try {
    doc = JSON.parse(run.stdout);
  } catch {
    throw new Error(
      `${where}: stdout is not one JSON document:\n${run.stdout}\n--- stderr ---\n${run.stderr}`,
    );
  }
  if (!validate(doc)) {
    const errors = ajv.errorsText(validate.errors, { separator: '\n' });
    throw new Error(`${where}: the document does not match its schema:\n${errors}\n${run.stdout}`);
  }
  const schema = schemaOf(argv, run.code);
  if (schema && WITH_EXIT_CODE.includes(schema) && doc.exit_code !== run.code) {
    throw new Error(`${where}: the document says exit_code ${String(doc.exit_code)}`);
  }
}

/** The prepared runs `runs --json` lists: each the head of a prepared run's document. */
function checkPreparedHeads(argv: readonly string[], stdout: string): void {
  validatorOf('prepared-run');
  const head = ajv.getSchema(
    'https://payouts.example/schema/prepared-run.schema.json#/$defs/head',
  )!;
  const items = JSON.parse(stdout) as Array<{ kind?: string }>;
  for (const item of items.filter((i) => i.kind === 'prepared')) {
    if (!head(item)) {
      const errors = ajv.errorsText(head.errors, { separator: '\n' });
      throw new Error(
        `payouts ${argv.join(' ')}: a prepared run does not match its head:\n${errors}`,
      );
    }
  }
}
