import { type Command, Option } from 'commander';
import type { CommandContext } from '../context.js';
import type { RetryRequest } from '../core/runs/retry.js';
import { UsageError } from '../errors.js';

/** The options of a command that writes a retry file (`runs show`, `reconcile`). */
export interface RetryFlags {
  failedOut?: string;
  newReferences?: string;
  reportEncoding?: 'excel' | 'utf8';
  reportLocale?: string;
}

/**
 * Declares --failed-out (its help: `what`), --new-references, --report-encoding and
 * --report-locale (`conventions`: where the file's conventions come from by default).
 */
export function retryFileOptions(cmd: Command, what: string, conventions: string): Command {
  return cmd
    .option('--failed-out <file>', what)
    .option(
      '--new-references <suffix>',
      'with --failed-out: fill new_reference_id with each reference_id followed by SUFFIX (such as -retry1)',
    )
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
      `write --failed-out for spreadsheets in LANG: de, fr, es, it, nl (";" and a decimal comma) or en ("," and a point) (default: ${conventions})`,
    );
}

/** The retry file asked for (undefined: none), its options checked. */
export async function retryRequestOf(
  ctx: CommandContext,
  flags: RetryFlags,
): Promise<RetryRequest | undefined> {
  if (flags.newReferences !== undefined && flags.failedOut === undefined) {
    throw new UsageError('--new-references only applies with --failed-out FILE');
  }
  if (flags.reportLocale !== undefined && flags.failedOut === undefined) {
    throw new UsageError('--report-locale only applies with --failed-out FILE');
  }
  if (flags.failedOut === undefined) return undefined;
  const [{ stateDir, configDir }, { parseReportLocale }] = await Promise.all([
    import('../paths.js'),
    import('../core/report-style.js'),
  ]);
  return {
    path: flags.failedOut,
    cwd: ctx.runtime.cwd,
    suffix: flags.newReferences,
    encoding: flags.reportEncoding,
    kept: [stateDir(ctx.runtime.env), configDir(ctx.runtime.env)],
    ...(flags.reportLocale === undefined ? {} : { locale: parseReportLocale(flags.reportLocale) }),
  };
}
