import type { Command } from 'commander';
import type { Runtime } from '../../context.js';
import { UsageError } from '../../errors.js';
import { exitCodesHelp } from '../../exit-codes.js';
import { defineAction, type ExitSink, examples } from '../command.js';
import { type RetryFlags, retryFileOptions, retryRequestOf } from '../retry-file.js';

/** Options of `payouts reconcile`. */
interface ReconcileFlags extends RetryFlags {
  run?: string;
  since?: string;
  all?: boolean;
  sandbox?: boolean;
  stateUrl?: string;
  concurrency?: string;
  quiet?: boolean;
}

/** A day or a time as --since takes it (2026-11-01, or ISO 8601 in UTC), as ISO text. */
function sinceOf(text: string): string {
  const t = text.trim();
  const day = /^\d{4}-\d{2}-\d{2}$/.test(t);
  const time = Date.parse(day ? `${t}T00:00:00Z` : t);
  if (!(day || /^\d{4}-\d{2}-\d{2}T/.test(t)) || Number.isNaN(time)) {
    throw new UsageError(
      `--since ${JSON.stringify(text)}: give a day as YYYY-MM-DD (such as 2026-11-01) or a time in ISO 8601 (2026-11-01T08:00:00Z)`,
    );
  }
  return new Date(time).toISOString();
}

/** Registers `payouts reconcile`. */
export function registerReconcile(program: Command, runtime: Runtime, sink: ExitSink): void {
  const cmd = program
    .command('reconcile')
    .description(
      'look up at the service every payout the history holds that is not final, keep its answer, and say what changed',
    )
    .option('--run <run-id>', 'every payout of this run (its id, or a unique prefix)')
    .option(
      '--since <day>',
      'every payout of the runs begun on or after this day (YYYY-MM-DD, UTC)',
    )
    .option('--all', 'every payout the history holds of the service')
    .option('--sandbox', 'reconcile with the built-in sandbox instead of the configured service')
    .option(
      '--state-url <url>',
      'a shared history, postgres://… (default: PAYOUTS_STATE_URL, else the state folder)',
    )
    .option(
      '--concurrency <n>',
      'lookups in flight at once, as a fixed ceiling (1-32; default: 4 growing to 16 as the service allows)',
    )
    .option('--quiet', 'no progress or summary on stderr: only errors');
  retryFileOptions(
    cmd,
    'write every payout found failed or canceled, and not retried, as an input file with a new_reference_id column to fill in; sends nothing',
    "as the first failed payout's run was read",
  ).addHelpText(
    'after',
    `${examples(
      'payouts reconcile',
      'payouts reconcile --since 2026-11-01 --failed-out nov.retry.csv --new-references -R1',
      'payouts reconcile --run 8be5b2 --json',
      'payouts reconcile --all --concurrency 4',
    )}
Without --run, --since or --all: every payout that is not final (pending, in doubt, a
status the interface does not name, or last found not held by the service). Each answer is
kept in the history, so runs, a re-run and a retry know it. A payout recorded as paid that
the service does not hold is an error line of its own. Ctrl-C keeps what was looked up.

${exitCodesHelp('reconcile')}`,
  );
  defineAction<[], ReconcileFlags>(cmd, runtime, sink, async (ctx, flags) => {
    const scopes = [flags.run !== undefined, flags.since !== undefined, Boolean(flags.all)];
    if (scopes.filter(Boolean).length > 1) {
      throw new UsageError('--run, --since and --all choose the payouts: give one of them');
    }
    const [{ runReconcile }, { openService }, { parseConcurrency }, { stateDir }] =
      await Promise.all([
        import('../../core/reconcile/show.js'),
        import('../../core/service.js'),
        import('../../core/status/options.js'),
        import('../../paths.js'),
      ]);
    const { stateUrlOf } = await import('../state-url.js');
    if (flags.quiet) ctx.output.quieten();
    const concurrency = parseConcurrency(flags.concurrency);
    const scope = {
      ...(flags.run === undefined ? {} : { run: flags.run }),
      ...(flags.since === undefined ? {} : { since: sinceOf(flags.since) }),
      ...(flags.all ? { all: true } : {}),
    };
    const failedOut = await retryRequestOf(ctx, flags);
    const stateUrl = flags.sandbox ? undefined : await stateUrlOf(ctx, flags.stateUrl);
    const service = await openService(ctx, { sandbox: Boolean(flags.sandbox) });
    const clock = ctx.runtime.clock ?? (await import('../../clock.js')).systemClock;
    try {
      return await runReconcile(
        { scope, ...(concurrency ? { concurrency } : {}), ...(failedOut ? { failedOut } : {}) },
        {
          from: { stateDir: stateDir(ctx.runtime.env), stateUrl, stop: ctx.runtime.interrupt },
          service,
          output: ctx.output,
          clock,
          interrupt: ctx.runtime.interrupt,
        },
      );
    } finally {
      await service.close();
    }
  });
}
