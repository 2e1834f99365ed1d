import { type Command, InvalidArgumentError, Option } from 'commander';
import { httpUrl } from '../../api/base-url.js';
import type { Runtime } from '../../context.js';
import { exitCodesHelp } from '../../exit-codes.js';
import type { InputEncoding, InputFormat } from '../../input/index.js';
import { UsageError } from '../../errors.js';
import { DEFAULT_EXTRA_CURRENCY_DIGITS } from '../../money/currencies.js';
import {
  collect,
  commandLineOf,
  defineAction,
  type ExitSink,
  examples,
  givenOptionWords,
} from '../command.js';
import { intOption } from '../options.js';

/** Raw option values of `payouts send`, as commander parses them. */
interface SendFlags {
  format?: InputFormat;
  sheet?: string;
  includeHidden?: boolean;
  delimiter?: string;
  encoding?: InputEncoding;
  decimalComma?: boolean;
  map?: string;
  allowCurrency?: string[];
  batchReference?: string;
  webhookUrl?: string;
  chunkSize: number;
  concurrency?: number;
  maxConcurrency: number;
  yes?: boolean;
  dryRun?: boolean;
  showRequest?: boolean;
  quiet?: boolean;
  jsonLines?: boolean;
  maxTotal?: string[];
  report?: string;
  failedOut?: string;
  reportEncoding?: 'excel' | 'utf8';
  reportDelimiter?: string;
  reportLocale?: string;
  all?: boolean;
  sandbox?: boolean;
  stateUrl?: string;
  checkService?: boolean;
  originalElsewhere?: boolean;
  wait?: number | true;
  prepare?: boolean;
  note?: string;
  approved?: string;
}

/**
 * The options that say how the files are read, and what the approval binds besides them: a
 * command that sends the same files again (after --prepare, after approve) repeats them.
 */
const FILE_OPTIONS = [
  '--format',
  '--sheet',
  '--include-hidden',
  '--delimiter',
  '--encoding',
  '--decimal-comma',
  '--map',
  '--allow-currency',
  '--batch-reference',
  '--webhook-url',
];

/** Parses --allow-currency CODE or CODE:DIGITS. */
export function parseAllowCurrency(text: string): [string, number] {
  const m = /^([A-Za-z]{3})(?::([0-4]))?$/.exec(text.trim());
  if (!m)
    throw new InvalidArgumentError(
      `--allow-currency ${JSON.stringify(text)}: use a three-letter code, optionally with its decimals, such as XTS or XTS:0`,
    );
  return [
    m[1]!.toUpperCase(),
    m[2] === undefined ? DEFAULT_EXTRA_CURRENCY_DIGITS : Number.parseInt(m[2], 10),
  ];
}

/** Parses --max-total CUR=AMOUNT. */
export function parseMaxTotal(text: string): { currency: string; amountText: string } {
  const m = /^([A-Za-z]{3})=(.+)$/.exec(text.trim());
  if (!m)
    throw new InvalidArgumentError(
      `--max-total ${JSON.stringify(text)}: use CUR=AMOUNT, such as EUR=10000.00`,
    );
  return { currency: m[1]!.toUpperCase(), amountText: m[2]! };
}

/**
 * Checks --webhook-url is an absolute http(s) URL, and not one whose password was masked where
 * payouts recorded it (a finishing command repeats it as user:***): that one is given again.
 */
function webhookUrl(value: string): string {
  const url = httpUrl(
    value,
    () =>
      new InvalidArgumentError(
        `--webhook-url ${JSON.stringify(value)}: use an absolute URL such as https://hooks.example.com/payouts`,
      ),
  );
  if (decodeURIComponent(url.password) === '***')
    throw new InvalidArgumentError(
      `--webhook-url ${JSON.stringify(value)}: its password shows as ***, as payouts records and shows it: give the webhook's URL with its real password`,
    );
  return value;
}

/** Registers `payouts send`. */
export function registerSend(program: Command, runtime: Runtime, sink: ExitSink): void {
  const cmd = program
    .command('send')
    .description(
      'validate payout files, confirm the totals, and send them in chunked create requests',
    )
    .argument('[files...]', 'CSV, JSON, NDJSON or .xlsx files ("-" reads standard input)')
    .addOption(
      new Option('--format <format>', 'input format when the extension does not tell').choices([
        'csv',
        'json',
        'ndjson',
        'xlsx',
      ]),
    )
    .option(
      '--sheet <name>',
      'the worksheet of an .xlsx workbook to read (default: the first visible one)',
    )
    .option(
      '--include-hidden',
      'pay the hidden rows of an .xlsx sheet too (default: refuse them, naming them)',
    )
    .option('--delimiter <char>', 'CSV delimiter: "," ";" or "tab" (default: detected)')
    .addOption(
      new Option(
        '--encoding <name>',
        'encoding of files without a byte-order mark (default: utf-8; UTF-16 is known by its mark, and tab preferred); iso-8859-1 is read as windows-1252, as in browsers',
      ).choices(['utf-8', 'windows-1252', 'iso-8859-1', 'utf-16le', 'utf-16be']),
    )
    .option(
      '--decimal-comma',
      'CSV amounts are written 1.234,56 ("." only between thousands); ";" is then preferred when the header line does not tell the delimiter',
    )
    .option(
      '--map <field=Header,...>',
      'header names for fields, e.g. amount=Betrag,reference_id=Ref',
    )
    .option(
      '--allow-currency <CODE[:DIGITS]>',
      'accept a code outside ISO 4217 (repeatable; 2 decimals unless given)',
      collect,
    )
    .option(
      '--batch-reference <ref>',
      'batch reference sent with every request (overrides the file)',
    )
    .option(
      '--webhook-url <url>',
      'webhook URL for these requests only (overrides the account default)',
      webhookUrl,
    )
    .option('--chunk-size <n>', 'payouts per request', intOption('--chunk-size', 1, 10_000), 100)
    .option(
      '--concurrency <n>',
      'requests in flight at once, as a fixed ceiling (default: adapt to the service)',
      intOption('--concurrency', 1, 64),
    )
    .option(
      '--max-concurrency <n>',
      'the most requests in flight an adaptive send may reach',
      intOption('--max-concurrency', 1, 64),
      16,
    )
    .option('-y, --yes', 'send without asking for confirmation (required without a terminal)')
    .option('--dry-run', 'validate and print the summary; send nothing')
    .option('--show-request', 'with --dry-run: print the first request on stdout')
    .option('--quiet', 'no summary, progress or notes on stderr: only errors (and the question)')
    .option(
      '--json-lines',
      'as --json, but one line a result, then a summary line (NDJSON): a stream a program can read as the rows come, for runs too large for one document',
    )
    .option(
      '--max-total <CUR=AMOUNT>',
      'refuse the run if a currency total is above AMOUNT (repeatable)',
      collect,
    )
    .option('--report <file>', 'write a CSV of every row with its outcome')
    .option(
      '--failed-out <file>',
      'write the rows known not to be paid (failed, canceled, not sent) as an input file whose new_reference_id column is to be filled in (a failed payout needs a new reference_id)',
    )
    .addOption(
      new Option(
        '--report-encoding <name>',
        'how --report and --failed-out are written: excel (UTF-8 with a byte-order mark and CRLF, so Excel shows accents) or utf8 (no mark, LF, for scripts)',
      )
        .choices(['excel', 'utf8'])
        .default('excel'),
    )
    .option(
      '--report-delimiter <char>',
      'the delimiter of --report and --failed-out: ",", ";" or "tab" (default: as the CSV files were read, else ",")',
    )
    .option(
      '--report-locale <lang>',
      'write --report and --failed-out for spreadsheets in LANG: de, fr, es, it, nl (";" and a decimal comma) or en ("," and a point) (default: as the CSV files were read)',
    )
    .option('--all', 'list every row in the results table, not only those needing attention')
    .option('--sandbox', 'send to a built-in local sandbox service: no money moves')
    .option(
      '--state-url <url>',
      'a history shared with the team, postgres://USER@HOST/DB?sslmode=verify-full, its password in PGPASSWORD or ~/.pgpass, never here (default: PAYOUTS_STATE_URL, else the state folder)',
    )
    .option(
      '--check-service',
      'before asking, look up at the service every payout the history does not know; found ones are not sent again',
    )
    .option(
      '--original-elsewhere',
      'send retry rows whose original this history never sent (a retry of it sent from another machine cannot be seen here), each only once the service says its original failed',
    )
    .option(
      '--prepare',
      "record the run for another person's approval (payouts approve) and send nothing; a shared history only (--json: the prepared run's document)",
    )
    .option('--note <text>', 'with --prepare: a note for the approver')
    .option(
      '--approved <run>',
      'send an approved prepared run from the shared history, without its files (exit 9 not approved yet, 10 rejected, 11 expired)',
    )
    .option(
      '--wait [seconds]',
      'when another send to the service is running, wait for it (--wait=SECONDS at most that long; a bare --wait, after the files, without limit) instead of exiting 8',
      intOption('--wait', 1, 86_400),
    )
    .addHelpText(
      'after',
      `${examples(
        'payouts send samples/payouts.csv --sandbox',
        'payouts send run.csv --dry-run',
        'payouts send run.csv --dry-run --show-request > first-request.json',
        'payouts send run.xlsx --sheet Payouts --dry-run     # cells read by their type',
        'payouts send export.csv --encoding windows-1252 --decimal-comma   # German Excel "CSV"',
        'payouts send run.csv --batch-reference MAY-2026 --max-total EUR=50000 --report may.csv',
        'payouts send run.csv --yes --json > result.json     # unattended, for CI',
        'payouts send big.csv --yes --json-lines | jq -c \'select(.status == "failed")\'',
        'payouts send run.csv --yes --check-service          # CI without a shared history',
        'payouts send run.csv --yes --wait=600     # wait up to 10 min for another send to end',
        'payouts send may.csv --prepare --note "May payroll"   # for approval: payouts approve',
        'payouts send --approved p3f2a9c --yes     # send the approved run, without its files',
        'cat run.ndjson | payouts send - --format ndjson --yes',
      )}
${exitCodesHelp('send')}`,
    );
  defineAction<[string[]], SendFlags>(cmd, runtime, sink, async (ctx, flags, files) => {
    const [
      { runSend },
      { parseMapOption, parseDelimiterOption },
      { openService, loadSettings, serviceKeyOf },
      { stateDir, configDir },
      { stateUrlOf },
      { lockWaitFor },
      { parseReportLocale },
    ] = await Promise.all([
      import('../../core/send/run.js'),
      import('../../input/index.js'),
      import('../../core/service.js'),
      import('../../paths.js'),
      import('../state-url.js'),
      import('../../state/db.js'),
      import('../../core/report-style.js'),
    ]);
    if (!files.length && flags.approved === undefined) {
      throw new UsageError("missing required argument 'files': give the payout files to send");
    }
    if (flags.note !== undefined && !flags.prepare)
      throw new UsageError('--note goes with --prepare');
    if (flags.prepare && (flags.dryRun || flags.approved !== undefined)) {
      throw new UsageError(
        '--prepare records a run for approval: leave out --dry-run and --approved',
      );
    }
    if (flags.jsonLines && flags.prepare) {
      throw new UsageError(
        '--json-lines gives the results of a send: leave it out with --prepare (--json prints the prepared run)',
      );
    }
    if (flags.showRequest && !flags.dryRun) {
      throw new UsageError('--show-request applies only with --dry-run: add --dry-run');
    }
    if (flags.quiet) ctx.output.quieten();
    // The sandbox is no one's money: its runs stay in the state folder.
    const stateUrl = flags.sandbox ? undefined : await stateUrlOf(ctx, flags.stateUrl);
    return runSend(
      {
        files,
        format: flags.format,
        sheet: flags.sheet,
        includeHidden: Boolean(flags.includeHidden),
        delimiter:
          flags.delimiter === undefined ? undefined : parseDelimiterOption(flags.delimiter),
        map: flags.map === undefined ? undefined : parseMapOption(flags.map),
        encoding: flags.encoding,
        decimalComma: Boolean(flags.decimalComma),
        allowCurrencies: (flags.allowCurrency ?? []).map(parseAllowCurrency),
        batchReference: flags.batchReference,
        webhookUrl: flags.webhookUrl,
        chunkSize: flags.chunkSize,
        concurrency: flags.concurrency,
        maxConcurrency: flags.maxConcurrency,
        yes: Boolean(flags.yes),
        dryRun: Boolean(flags.dryRun),
        showRequest: Boolean(flags.showRequest),
        maxTotals: (flags.maxTotal ?? []).map(parseMaxTotal),
        reportPath: flags.report,
        failedOutPath: flags.failedOut,
        reportEncoding: flags.reportEncoding,
        ...(flags.reportDelimiter === undefined
          ? {}
          : { reportDelimiter: parseDelimiterOption(flags.reportDelimiter, '--report-delimiter') }),
        ...(flags.reportLocale === undefined
          ? {}
          : { reportLocale: parseReportLocale(flags.reportLocale) }),
        all: Boolean(flags.all),
        sandbox: Boolean(flags.sandbox),
        checkService: Boolean(flags.checkService),
        ...(flags.originalElsewhere ? { originalElsewhere: true } : {}),
        prepare: Boolean(flags.prepare),
        ...(flags.note === undefined ? {} : { note: flags.note }),
        ...(flags.approved === undefined ? {} : { approved: flags.approved }),
        ...(flags.wait === undefined
          ? {}
          : { waitSeconds: flags.wait === true ? Number.POSITIVE_INFINITY : flags.wait }),
      },
      {
        output: ctx.output,
        stdin: ctx.runtime.stdin,
        stateDir: stateDir(ctx.runtime.env),
        configDir: configDir(ctx.runtime.env),
        cwd: ctx.runtime.cwd,
        stateWait: lockWaitFor(ctx.runtime.env.PAYOUTS_STATE_WAIT),
        pid: ctx.runtime.pid,
        interrupt: ctx.runtime.interrupt,
        finishNow: ctx.runtime.finishNow,
        clock: ctx.runtime.clock,
        commandLine: commandLineOf(cmd, files),
        fileArgs: givenOptionWords(cmd, FILE_OPTIONS),
        serviceArgs: [
          ...(flags.sandbox ? ['--sandbox'] : []),
          ...(ctx.globals.profile ? ['--profile', ctx.globals.profile] : []),
          ...(ctx.globals.baseUrl ? ['--base-url', ctx.globals.baseUrl] : []),
        ],
        stateUrl,
        connect: () => openService(ctx, { sandbox: Boolean(flags.sandbox) }),
        preview: async () => {
          const s = await loadSettings(ctx);
          const serviceKey = s.baseUrl ? serviceKeyOf(s.baseUrl.value) : undefined;
          return { baseUrl: s.baseUrl?.value, profile: s.profile.value, serviceKey };
        },
      },
    );
  });
}
