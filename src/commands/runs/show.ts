import type { Command } from 'commander';
import type { Runtime } from '../../context.js';
import { defineAction, type ExitSink, examples } from '../command.js';
import { type RetryFlags, retryFileOptions, retryRequestOf } from '../retry-file.js';

/** Options of `payouts runs show`. */
interface ShowFlags extends RetryFlags {
  stateUrl?: string;
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
    .option('--all', "a prepared run's table lists every payout, not the first 50");
  retryFileOptions(
    cmd,
    "write the run's failed and canceled payouts as an input file with a new_reference_id column to fill in; sends nothing",
    "as the run's CSV files were read",
  ).addHelpText(
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
    const [{ showRun }, { stateDir }] = await Promise.all([
      import('../../core/runs/runs.js'),
      import('../../paths.js'),
    ]);
    const { stateUrlOf, readerBaseUrl } = await import('../state-url.js');
    const retry = await retryRequestOf(ctx, flags);
    const stateUrl = await stateUrlOf(ctx, flags.stateUrl);
    // A prepared run's screen spells the service as the reader's send does.
    const baseUrl = stateUrl && id.startsWith('p') ? await readerBaseUrl(ctx) : undefined;
    return showRun({ stateDir: stateDir(ctx.runtime.env), stateUrl }, id, ctx.output, retry, {
      all: Boolean(flags.all),
      ...(baseUrl === undefined ? {} : { baseUrl }),
    });
  });
}
