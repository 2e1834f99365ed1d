import { type Command, Option } from 'commander';
import type { Runtime } from '../../context.js';
import { UsageError } from '../../errors.js';
import { defineAction, type ExitSink, examples } from '../command.js';

/** Options of `payouts runs show`. */
interface ShowFlags {
  stateUrl?: string;
  failedOut?: string;
  newReferences?: string;
  reportEncoding?: 'excel' | 'utf8';
  reportLocale?: string;
  all?: boolean;
}

/** Registers `payouts runs show ID`. */
export function registerRunsShow(runs: Command, runtime: Runtime, sink: ExitSink): void {
  const cmd = runs
    .command('show')
    .description("show one run's payouts and their states")
    .argument('<run-id>', 'run id, or a unique prefix of it')
    .option(
      '--state-url <url>',
      'read the runs of a shared history, postgres://… (default: PAYOUTS_STATE_URL, else the state folder)',
    )
    .option(
      '--failed-out <file>',
      "write the run's failed and canceled payouts as an input file with a new_reference_id column to fill in; sends nothing",
    )
    .option(
      '--new-references <suffix>',
      'with --failed-out: fill new_reference_id with each reference_id followed by SUFFIX (such as -retry1)',
    )
    .option('--all', "a prepared run's table lists every payout, not the first 50")
    .addOption(
      new Option(
        '--report-encoding <name>',
        'how --failed-out is written (see payouts send --help)',
      )
        .choices(['excel', 'utf8'])
        .default('excel'),
    )
    .option(
      '--report-locale <lang>',
      'write --failed-out for spreadsheets in LANG: de, fr, es, it, nl (";" and a decimal comma) or en ("," and a point) (default: as the run\'s CSV files were read)',
    )
    .addHelpText(
      'after',
      examples(
        'payouts runs show 3f2a9c',
        'payouts runs show 3f2a9c --json',
        'payouts runs show p3f2a9c --all',
        'payouts runs show 3f2a9c --failed-out retry.csv',
        'payouts runs show 3f2a9c --failed-out retry.csv --new-references -retry1',
      ),
    );
  defineAction<[string], ShowFlags>(cmd, runtime, sink, async (ctx, flags, id) => {
    if (flags.newReferences !== undefined && flags.failedOut === undefined) {
      throw new UsageError('--new-references only applies with --failed-out FILE');
    }
    if (flags.reportLocale !== undefined && flags.failedOut === undefined) {
      throw new UsageError('--report-locale only applies with --failed-out FILE');
    }
    const [{ showRun }, { stateDir, configDir }, { parseReportLocale }] = await Promise.all([
      import('../../core/runs/runs.js'),
      import('../../paths.js'),
      import('../../core/report-style.js'),
    ]);
    const { stateUrlOf } = await import('../state-url.js');
    const stateUrl = await stateUrlOf(ctx, flags.stateUrl);
    const retry =
      flags.failedOut === undefined
        ? undefined
        : {
            path: flags.failedOut,
            cwd: ctx.runtime.cwd,
            suffix: flags.newReferences,
            encoding: flags.reportEncoding,
            kept: [stateDir(ctx.runtime.env), configDir(ctx.runtime.env)],
            ...(flags.reportLocale === undefined
              ? {}
              : { locale: parseReportLocale(flags.reportLocale) }),
          };
    return showRun(
      { stateDir: stateDir(ctx.runtime.env), stateUrl },
      id,
      ctx.output,
      retry,
      Boolean(flags.all),
    );
  });
}
