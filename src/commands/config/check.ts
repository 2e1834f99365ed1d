import type { Command } from 'commander';
import type { Runtime } from '../../context.js';
import { CredentialsError, errorMessage } from '../../errors.js';
import { ExitCode, exitCodesHelp } from '../../exit-codes.js';
import { defineAction, type ExitSink, examples } from '../command.js';

/** Options of `config check`. */
interface CheckOptions {
  sandbox?: boolean;
  stateUrl?: string;
}

/** Credentials not configured (not rejected): the error requireComplete throws. */
function missingCredentials(error: unknown): boolean {
  return error instanceof CredentialsError && error.constructor === CredentialsError;
}

/** Registers `payouts config check`. */
export function registerCheck(config: Command, runtime: Runtime, sink: ExitSink): void {
  const cmd = config
    .command('check')
    .description(
      'check that the service accepts the credentials (reads a payout that cannot exist)',
    )
    .option('--sandbox', 'check against the built-in sandbox')
    .option(
      '--state-url <url>',
      'also connect to this shared history (default: PAYOUTS_STATE_URL, else the profile)',
    )
    .addHelpText(
      'after',
      `${examples('payouts config check', 'payouts --profile staging config check --json')}
With a shared history (state_url), it also connects there and says what it holds; a
profile without credentials (one who prepares or approves) gets the history checked alone.

${exitCodesHelp('config check')}`,
    );
  defineAction<[], CheckOptions>(cmd, runtime, sink, async (ctx, opts) => {
    // Loaded when the command runs, so start-up of every other command stays light.
    const [{ verifyCredentials, probeHistory, historyLine }, { openService }, { stateUrlOf }] =
      await Promise.all([
        import('../../core/config/check.js'),
        import('../../core/service.js'),
        import('../state-url.js'),
      ]);
    const stateUrl = opts.sandbox ? undefined : await stateUrlOf(ctx, opts.stateUrl);
    let service: Awaited<ReturnType<typeof openService>>;
    try {
      service = await openService(ctx, { sandbox: Boolean(opts.sandbox) });
    } catch (error) {
      // A profile that only prepares or approves runs has no secret: its history is checked.
      if (stateUrl === undefined || !missingCredentials(error)) throw error;
      const history = await probeHistory(stateUrl);
      ctx.output.result({ ok: true, credentials: null, history }, () =>
        [
          historyLine(history),
          `No credentials (${errorMessage(error)}): enough to prepare and approve runs, not to send`,
        ].join('\n'),
      );
      return ExitCode.ok;
    }
    try {
      const result = await verifyCredentials(service.client, { signal: ctx.runtime.interrupt });
      const { profile, baseUrl, clientId } = service.settings;
      const accepted = `Credentials accepted by ${baseUrl} (profile "${profile}", Client-Id ${clientId})`;
      // One answer on one stream: both lines on stdout; a history that fails says, in its
      // error, that the credentials were accepted.
      const history =
        stateUrl === undefined
          ? undefined
          : await probeHistory(stateUrl).catch((err: unknown) => {
              if (err instanceof Error) err.message = `${accepted}, but ${err.message}`;
              throw err;
            });
      ctx.output.result(
        {
          ok: true,
          profile,
          base_url: baseUrl,
          client_id: clientId,
          probe: result.probe,
          history: history ?? null,
        },
        () => (history ? `${accepted}\n${historyLine(history)}` : accepted),
      );
      return ExitCode.ok;
    } finally {
      await service.close();
    }
  });
}
