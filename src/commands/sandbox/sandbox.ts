import type { Command } from 'commander';
import type { CommandContext, Runtime } from '../../context.js';
import { UsageError } from '../../errors.js';
import { ExitCode } from '../../exit-codes.js';
import { stateDir } from '../../paths.js';
import { collect, defineAction, type ExitSink, examples } from '../command.js';

/** The options of `payouts sandbox`, as commander hands them over. */
interface SandboxFlags {
  port?: string;
  prefix?: string;
  pendingDelay?: string;
  webhookUrl?: string;
  latency?: string;
  maxPerRequest?: string;
  fault?: string[];
  trigger?: string[];
}

/** Reads a whole-number flag, naming the flag when it is not one. */
export function wholeNumber(flag: string, text: string | undefined, min = 0): number | undefined {
  if (text === undefined) return undefined;
  const t = text.trim();
  if (!/^\d+$/.test(t) || !Number.isSafeInteger(Number(t)) || Number(t) < min) {
    throw new UsageError(`${flag} ${JSON.stringify(text)}: use a whole number from ${min}`);
  }
  return Number(t);
}

/** Resolves when the run is interrupted (SIGINT or SIGTERM). */
function interrupted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

type SandboxModule = typeof import('../../sandbox/index.js');

/** What recipients trigger, for people: the built-in triggers, then the user's own. */
function triggerLines(
  sb: SandboxModule,
  own: readonly import('../../sandbox/index.js').TriggerRule[],
  delayMs: number,
): string[] {
  const after = sb.delayText(delayMs);
  return [
    'Recipients containing +failed, +canceled or +pending get that status (pending ones succeed',
    `after ${after}); +late-failed and +late-canceled are pending, then failed or canceled after`,
    `${after}; +returned and +recalled succeed, then turn failed or canceled after ${after}.`,
    ...(own.length
      ? ['Your triggers, checked first:', ...own.map((t) => `  ${sb.triggerText(t, delayMs)}`)]
      : []),
  ];
}

/** Runs the sandbox in the foreground until interrupted. */
async function runSandbox(ctx: CommandContext, flags: SandboxFlags): Promise<number> {
  const port = wholeNumber('--port', flags.port);
  if (port !== undefined && port > 65535) {
    throw new UsageError(`--port ${port}: use a port from 0 to 65535 (0 picks a free one)`);
  }
  const pendingDelayMs = wholeNumber('--pending-delay', flags.pendingDelay);
  const latencyMs = wholeNumber('--latency', flags.latency);
  const maxPayoutsPerRequest = wholeNumber('--max-per-request', flags.maxPerRequest, 1);
  // Loaded here so other commands never pay for the sandbox's modules at start-up.
  const sb = await import('../../sandbox/index.js');
  const faults = (flags.fault ?? []).map(sb.parseFaultRule);
  // --trigger replaces the variable's rules, as a flag overrides its variable.
  const triggers = flags.trigger
    ? flags.trigger.map((t) => sb.parseTriggerRule(t))
    : sb.parseTriggerList(ctx.runtime.env.PAYOUTS_SANDBOX_TRIGGERS, 'PAYOUTS_SANDBOX_TRIGGERS');
  const state = stateDir(ctx.runtime.env);
  const { clock } = ctx.runtime;
  const sandbox = await sb.startSandbox({
    stateDir: state,
    port,
    pathPrefix: flags.prefix,
    pendingDelayMs,
    defaultWebhookUrl: flags.webhookUrl,
    latencyMs,
    maxPayoutsPerRequest,
    faults,
    triggers,
    log: (line) => ctx.output.info(`sandbox: ${line}`),
    // The runtime's clock when it has one (a test's), as `--sandbox` takes it.
    ...(clock ? { now: () => clock.now() } : {}),
  });
  try {
    const { clientId, clientSecret } = sb.SANDBOX_CREDENTIALS;
    ctx.output.result(
      {
        base_url: sandbox.baseUrl,
        client_id: clientId,
        client_secret: clientSecret,
        state_dir: state,
        pending_delay_ms: sandbox.pendingDelayMs,
        triggers: sandbox.triggers.map((t) => sb.triggerJson(t, sandbox.pendingDelayMs)),
      },
      () =>
        [
          `Sandbox payout service listening on ${sandbox.baseUrl}`,
          '',
          `  Client-Id:      ${clientId}`,
          `  Client-Secret:  ${clientSecret}   (a public demo value)`,
          `  State:          ${sb.sandboxDir(state)}`,
          '',
          'Try it from another terminal:',
          `  PAYOUTS_CLIENT_ID=${clientId} PAYOUTS_CLIENT_SECRET=${clientSecret} \\`,
          `    payouts --base-url ${sandbox.baseUrl} status REF`,
          '',
          ...triggerLines(sb, triggers, sandbox.pendingDelayMs),
          'Press Ctrl-C to stop.',
        ].join('\n'),
    );
    await interrupted(ctx.runtime.interrupt);
    ctx.output.info('sandbox: stopping');
  } finally {
    await sandbox.close();
  }
  return ExitCode.ok;
}

/** Registers `payouts sandbox`. */
export function registerSandbox(program: Command, runtime: Runtime, sink: ExitSink): void {
  const cmd = program
    .command('sandbox')
    .description('run the local sandbox payout service in the foreground (127.0.0.1), until Ctrl-C')
    .option('--port <n>', 'port to listen on (default: 0, a free port)')
    .option('--prefix <path>', 'path prefix before /api/v1, e.g. /merchant')
    .option(
      '--pending-delay <ms>',
      'pending payouts settle, and returned ones turn failed, after this (default: 30000)',
    )
    .option('--webhook-url <url>', "the account's default webhook URL")
    .option('--latency <ms>', 'delay added before every answer')
    .option('--max-per-request <n>', 'answer HTTP 413 to requests with more payouts than this')
    .option(
      '--fault <rule>',
      'inject a fault, repeatable: ENDPOINT:N:KIND[:SECONDS] with ENDPOINT create|status|any and KIND 500|429|413|cut|cut-before',
      collect,
    )
    .option(
      '--trigger <rule>',
      'recipients containing MATCH are answered STATUS, and read LATER after MS (default: the pending delay), before the built-in triggers; repeatable: MATCH:STATUS[:LATER][:MS] (default: PAYOUTS_SANDBOX_TRIGGERS)',
      collect,
    )
    .addHelpText(
      'after',
      examples(
        'payouts sandbox --port 8080',
        'payouts sandbox --port 8080 --prefix /merchant --pending-delay 5000',
        'payouts sandbox --fault create:2:500 --fault create:3:429:5 --fault create:4:cut',
        'payouts sandbox --port 0 --json',
        'payouts sandbox --trigger +bounce:success:failed:5000 --trigger @slow.example:pending:120000',
        'PAYOUTS_CLIENT_ID=sandbox-client-id PAYOUTS_CLIENT_SECRET=sandbox-client-secret \\\n      payouts --base-url http://127.0.0.1:8080 status REF',
      ),
    );
  defineAction<[], SandboxFlags>(cmd, runtime, sink, runSandbox);
}
