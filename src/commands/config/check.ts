import type { Command } from 'commander';
import type { Runtime } from '../../context.js';
import { ExitCode } from '../../exit-codes.js';
import { defineAction, type ExitSink, examples } from '../command.js';

/** Options of `config check`. */
interface CheckOptions {
  sandbox?: boolean;
}

/** Registers `payouts config check`. */
export function registerCheck(config: Command, runtime: Runtime, sink: ExitSink): void {
  const cmd = config
    .command('check')
    .description(
      'check that the service accepts the credentials (reads a payout that cannot exist)',
    )
    .option('--sandbox', 'check against the built-in sandbox')
    .addHelpText(
      'after',
      `${examples('payouts config check', 'payouts --profile staging config check --json')}
Exit codes: 0 accepted, 3 missing or rejected (or this machine's IP address is not allowed),
7 service unreachable.
`,
    );
  defineAction<[], CheckOptions>(cmd, runtime, sink, async (ctx, opts) => {
    // Loaded when the command runs, so start-up of every other command stays light.
    const [{ verifyCredentials }, { openService }] = await Promise.all([
      import('../../core/config/check.js'),
      import('../../core/service.js'),
    ]);
    const service = await openService(ctx, { sandbox: Boolean(opts.sandbox) });
    try {
      const result = await verifyCredentials(service.client, { signal: ctx.runtime.interrupt });
      const { profile, baseUrl, clientId } = service.settings;
      ctx.output.result(
        { ok: true, profile, base_url: baseUrl, client_id: clientId, probe: result.probe },
        () => `Credentials accepted by ${baseUrl} (profile "${profile}", Client-Id ${clientId})`,
      );
      return ExitCode.ok;
    } finally {
      await service.close();
    }
  });
}
