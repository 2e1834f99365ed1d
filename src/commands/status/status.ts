import type { Command } from 'commander';
import type { Runtime } from '../../context.js';
import { exitCodesHelp } from '../../exit-codes.js';
import type { CommandContext } from '../../context.js';
import type { RunsSource } from '../../core/runs/reader.js';
import type { LookupOutcome } from '../../core/status/lookup.js';
import type { StatusFlags } from '../../core/status/options.js';
import { InterruptedError } from '../../errors.js';
import { collect, defineAction, type ExitSink, examples } from '../command.js';

/** Options of `payouts status`. */
interface StatusOptions extends StatusFlags {
  from?: string[];
  sandbox?: boolean;
  quiet?: boolean;
  all?: boolean;
}

/** Registers `payouts status`. */
export function registerStatus(program: Command, runtime: Runtime, sink: ExitSink): void {
  const cmd = program
    .command('status')
    .description('show the status of payouts by their reference_id')
    .argument('[reference_id...]', 'references of the payouts to look up')
    .option(
      '--from <file>',
      'read references from a file: one per line, or a CSV with a reference_id column such as the report of "send" ("-" = standard input; repeatable)',
      collect,
    )
    .option('--sandbox', 'ask the built-in sandbox instead of the configured service')
    .option(
      '--concurrency <n>',
      'lookups in flight at once, as a fixed ceiling (1-32; default: 4 growing to 16 as the service allows)',
    )
    .option('--watch', 'poll until every payout is success, failed or canceled')
    .option(
      '--interval <seconds>',
      'with --watch: first wait between polls, growing x1.5 up to 30 (default 2)',
    )
    .option('--timeout <seconds>', 'with --watch: stop after this long (default 600)')
    .option(
      '--all',
      'list every payout; by default those needing attention come first and, past 50, successes are only counted',
    )
    .option('--quiet', 'no progress, changes or summary on stderr: only errors')
    .addHelpText(
      'after',
      `${examples(
        'payouts status INV-2026-0412',
        'payouts status INV-2026-0412 INV-2026-0413 INV-2026-0414 --json',
        'payouts status --from may.report.csv',
        'cut -d, -f1 refs.csv | payouts status --from -',
        'payouts status INV-2026-0412 --watch --timeout 300',
        'payouts status demo-1 --sandbox',
      )}
With --json: one document with the counts and one result per reference (docs/json.md); a
reference that does not exist has "outcome": "not_found". With --watch, status changes are
printed on stderr as they happen; --json prints only the final document.

${exitCodesHelp('status')}`,
    );
  defineAction<[string[]], StatusOptions>(cmd, runtime, sink, async (ctx, opts, refs) => {
    // Loaded here, not at start-up: csv-parse and undici cost time every other command would pay.
    const [
      { openService },
      { checkStatuses, lookUpMore },
      { withHistory },
      { parseStatusFlags },
      { gatherReferences },
      { renderStatus },
    ] = await Promise.all([
      import('../../core/service.js'),
      import('../../core/status/check.js'),
      import('../../core/status/chains.js'),
      import('../../core/status/options.js'),
      import('../../core/status/references.js'),
      import('../../core/status/render.js'),
    ]);
    if (opts.quiet) ctx.output.quieten();
    const flags = parseStatusFlags(opts);
    const files = opts.from ?? [];
    const references = await gatherReferences(refs, files, {
      cwd: ctx.runtime.cwd,
      // A getter: stdin is only created for --from -.
      get stdin() {
        return ctx.runtime.stdin;
      },
      note: (m) => ctx.output.info(`note: ${m}`),
    });
    const service = await openService(ctx, { sandbox: Boolean(opts.sandbox) });
    // The history's reads, when a payout failed or was not found: on one session (closed last).
    let read: (RunsSource & { close(): Promise<void> }) | undefined;
    const { clock } = ctx.runtime;
    const deps = {
      signal: ctx.runtime.interrupt,
      // The runtime's clock, when it has one, times retries and --watch polls.
      ...(clock
        ? { sleep: (ms: number, s?: AbortSignal) => clock.sleep(ms, s), now: () => clock.now() }
        : {}),
    };
    try {
      const checked = await checkStatuses(
        service.client,
        { ...flags, references },
        { ...deps, output: ctx.output },
      );
      // An unreachable service is one error, not one per row (with --json, beside the results).
      // Interrupted, the lookups done so far are shown all the same, with the interruption.
      const partial = checked.fatal instanceof InterruptedError && checked.outcomes.length > 0;
      if (checked.fatal && !ctx.output.json && !partial) throw checked.fatal;
      // Where the history is, read only when a payout failed or was not found.
      const from = async () => {
        const [{ stateDir }, { stateUrlOf }, { sharedSession }] = await Promise.all([
          import('../../paths.js'),
          import('../state-url.js'),
          import('../../core/runs/reader.js'),
        ]);
        // A stop ends the wait for a shared history at once: what it would add is left out.
        // Its reads, and keeping the answers after them, share one session.
        read ??= sharedSession({
          stateDir: stateDir(ctx.runtime.env),
          stateUrl: await stateUrlOf(ctx, undefined),
          stop: ctx.runtime.interrupt,
        });
        return read;
      };
      const { history, report } = await withHistory(checked, {
        service,
        from,
        output: ctx.output,
        signal: ctx.runtime.interrupt,
        lookUp: (refs) => lookUpMore(service.client, refs, deps),
      });
      // The service's word is kept for the payouts the history holds: the retries asked too.
      const retries = [...(history?.retries?.values() ?? [])];
      const asked = new Set(references);
      const answers = [...report.outcomes, ...retries.filter((o) => !asked.has(o.reference_id))];
      await keepAnswers(ctx, service, answers, { watch: Boolean(opts.watch), read });
      const single = files.length === 0 && references.length === 1;
      await renderStatus(ctx.output, report, {
        single,
        watch: Boolean(opts.watch),
        all: Boolean(opts.all),
        notFound: history,
      });
      if (report.fatal) ctx.output.error(report.fatal.message);
      return report.exitCode;
    } finally {
      await read?.close();
      await service.close();
    }
  });
}

/**
 * Keeps the answers about payouts the history holds as the service's word (keep.ts): the
 * history of a --sandbox run is the state folder's, as its send's was.
 */
async function keepAnswers(
  ctx: CommandContext,
  service: { sandbox: boolean; serviceKey: string; settings: { clientId: string } },
  outcomes: LookupOutcome[],
  how: { watch: boolean; read?: RunsSource },
): Promise<void> {
  const [{ keepStatusAnswers }, { stateDir }, { stateUrlOf }] = await Promise.all([
    import('../../core/status/keep.js'),
    import('../../paths.js'),
    import('../state-url.js'),
  ]);
  const stateUrl = service.sandbox ? undefined : await stateUrlOf(ctx, undefined);
  const now = ctx.runtime.clock?.now() ?? Date.now();
  // The session the history's reads opened, if any; kept without a stop, as any keeping is.
  const read = how.read?.stateUrl === stateUrl ? how.read : undefined;
  await keepStatusAnswers(outcomes, {
    from: {
      stateDir: stateDir(ctx.runtime.env),
      stateUrl,
      ...(read ? { session: read.session } : {}),
    },
    serviceKey: service.serviceKey,
    clientId: service.settings.clientId,
    how: { at: new Date(now).toISOString(), by: how.watch ? 'status --watch' : 'status' },
    output: ctx.output,
  });
}
