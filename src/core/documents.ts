/**
 * The --json documents of `send` and `status`: their version and the keys every document has
 * (docs/json.md, docs/schema/). Loaded by main.ts on an error, so it imports nothing heavy.
 */

import {
  ApprovalStateError,
  errorMessage,
  formatProblem,
  InputError,
  InterruptedError,
  OutcomeUnknownError,
  type Problem,
} from '../errors.js';
import { isDocumentedStatus, statusKind } from '../domain/statuses.js';

/**
 * The version of every --json document. Fields are only ever added; a change that removes,
 * renames or retypes one raises it.
 */
export const SCHEMA_VERSION = 1;

/** The `command` of the prepared run `send --prepare` prints (one `command` value per shape). */
export const SEND_PREPARE = 'send prepare';

/**
 * What `status` says of a status the interface does not document (such as "processing"): the
 * enumerated `status` stays strict, and the service's word travels in `service_status`.
 */
export const UNDOCUMENTED = 'undocumented';

/**
 * `status` and `service_status` of a send result: a documented status, the CLI's own (not_sent,
 * unknown: the service stated none) or "undocumented"; and the status the service stated.
 */
export function sendStatusJson(status: string): { status: string; service_status: string | null } {
  const kind = statusKind(status);
  if (kind === 'not_sent' || kind === 'outcome_unknown') return { status, service_status: null };
  return { status: kind === 'undocumented' ? UNDOCUMENTED : status, service_status: status };
}

/** `status` and `service_status` of a status the service stated (a lookup, a recorded result). */
export function serviceStatusJson(status: string): { status: string; service_status: string } {
  return { status: isDocumentedStatus(status) ? status : UNDOCUMENTED, service_status: status };
}

/** The keys every document of a command other than send and status starts with. */
export function documentHead(command: string) {
  return { schema_version: SCHEMA_VERSION, command };
}

/** A problem of the input as the error object lists it: every key present, null when absent. */
function problemJson(p: Problem) {
  return {
    file: p.file,
    location: p.location ?? null,
    field: p.field ?? null,
    value: p.value ?? null,
    message: p.message,
    text: formatProblem(p),
  };
}

/** The `error` object of a document: what stopped the command, and its exit code. */
export function errorObject(error: unknown, exitCode: number, message = errorMessage(error)) {
  return {
    type: error instanceof Error ? error.name : 'Error',
    message,
    exit_code: exitCode,
    problems: error instanceof InputError ? error.problems.map(problemJson) : null,
    problem_count: error instanceof InputError ? error.totalProblems : null,
    references: error instanceof OutcomeUnknownError ? error.references : null,
    // Which prepared run stops the send, and why: a script reads it rather than the message.
    ...(error instanceof ApprovalStateError ? { approval: error.approval } : {}),
  };
}

/** The `error` object, or null. */
export type ErrorObject = ReturnType<typeof errorObject> | null;

/** Every key of a send document before `results`, as a run that got nowhere has them. */
export function sendDocHead(flags: { dryRun: boolean; sandbox: boolean }) {
  return {
    schema_version: SCHEMA_VERSION,
    command: 'send',
    exit_code: 0 as number,
    dry_run: flags.dryRun,
    sandbox: flags.sandbox,
    interrupted: false,
    run_id: null as string | null,
    batch_reference: null as string | null,
    payout_count: null as number | null,
    totals: null as Record<string, { count: number; total: string }> | null,
    success_count: null as number | null,
    failed_count: null as number | null,
    canceled_count: null as number | null,
    pending_count: null as number | null,
    unknown_count: null as number | null,
    not_sent_count: null as number | null,
    sent_earlier_count: null as number | null,
    found_at_service_count: null as number | null,
    paid_by_retry_count: null as number | null,
    /** The retry rows --original-elsewhere let through: their originals this history never sent. */
    original_elsewhere: [] as Array<{ reference_id: string; retry_of: string }>,
    charges: null as Record<string, string> | null,
    charges_unknown_count: null as number | null,
    outcome_unknown: [] as string[],
    peak_concurrency: null as number | null,
    rate_limited_count: null as number | null,
    request_count: null as number | null,
    sent_earlier: null as unknown,
    to_read_back: null as unknown,
    to_send: null as unknown,
    first_request: null as unknown,
    error: null as ErrorObject,
  };
}

/** The head of a send document. */
export type SendDocHead = ReturnType<typeof sendDocHead>;

/** One payout of a send's `results` (core/send/render.ts writes it). */
export interface SendResult {
  reference_id: string;
  status: string;
  transaction_id: string | null;
  /** Exact decimal text, as the files had it. */
  amount: string;
  currency: string;
  charges: string | null;
  message: string | null;
  sent_earlier: boolean;
  found_at_service: boolean;
  /** A payout failed earlier that a retry took on: that retry (docs/history.md). */
  retried_as: { reference_id: string; run_id: string; status: string } | null;
  /** Failed earlier and paid by its retry: counted in success_count. */
  paid_by_retry: boolean;
}

/** A send's whole --json document (docs/schema/send.schema.json), as a reader of it sees it. */
export type SendDoc = SendDocHead & {
  /** What the summary's Approval: line said (docs/approvals.md). */
  approval_status?: { state: string; prepared_run_id: string | null; text: string };
  /** The approved run that let it go. */
  approval?: {
    prepared_run_id: string;
    approvers: Array<{ role: string; os_user: string | null; host: string | null; at: string }>;
    approved_at: string | null;
  };
  results: SendResult[];
};

/** Every key of a status document before `results`, as a run that got nowhere has them. */
export function statusDocHead(flags: { watch: boolean }) {
  return {
    schema_version: SCHEMA_VERSION,
    command: 'status',
    exit_code: 0 as number,
    watch: flags.watch,
    timed_out: false,
    interrupted: false,
    reference_count: null as number | null,
    success_count: null as number | null,
    paid_by_retry_count: null as number | null,
    pending_count: null as number | null,
    failed_count: null as number | null,
    unknown_count: null as number | null,
    not_found_count: null as number | null,
    error_count: null as number | null,
    error: null as ErrorObject,
  };
}

/** Global options that take a value, to skip when looking for the command's name. */
const VALUE_OPTIONS = new Set(['--profile', '--base-url']);

/** The command an argv names (its first word that is not an option), if any. */
export function commandOf(argv: readonly string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (VALUE_OPTIONS.has(a)) i += 1;
    else if (!a.startsWith('-')) return a;
  }
  return undefined;
}

/**
 * The one document of a command that ended in an error before it printed its own: the send or
 * status document with no results, or for the other commands their head (`command`: the
 * path argv runs, see commandPathIn; null when it names none) and `error`.
 */
export function errorDocument(
  argv: readonly string[],
  error: unknown,
  exitCode: number,
  path?: string,
) {
  const err = errorObject(error, exitCode);
  const command = commandOf(argv);
  const ended = { exit_code: exitCode, interrupted: error instanceof InterruptedError, error: err };
  if (command === 'send') {
    const flags = { dryRun: argv.includes('--dry-run'), sandbox: argv.includes('--sandbox') };
    return { ...sendDocHead(flags), ...ended, results: [] };
  }
  if (command === 'status') {
    return { ...statusDocHead({ watch: argv.includes('--watch') }), ...ended, results: [] };
  }
  return { schema_version: SCHEMA_VERSION, command: path ?? null, error: err };
}
