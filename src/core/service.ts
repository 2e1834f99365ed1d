import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { serviceIdentity } from '../api/base-url.js';
import type { PayoutClient, SlowWait } from '../api/client.js';
import { Secret } from '../api/secret.js';
import { openSystemKeyring, type SecretStore } from '../config/keyring.js';
import {
  type CompleteSettings,
  requireComplete,
  resolveSettings,
  type Settings,
} from '../config/settings.js';
import type { CommandContext } from '../context.js';
import { configDir, stateDir } from '../paths.js';
import { userAgent } from '../version.js';
import { type Timing, timingFor, withQuietTime } from './timing.js';

/** The service key of the built-in sandbox. */
export const SANDBOX_SERVICE_KEY = 'sandbox';

/**
 * What names a service in the history and its run lock: its identity (serviceIdentity), so
 * http://127.0.0.1:8787 and http://localhost:8787/ are one service. The Client-Id is not part
 * of it, so a rotated key or a colleague's key shares the history.
 */
export function serviceKeyOf(baseUrl: string): string {
  return serviceIdentity(baseUrl);
}

/** A service to talk to: a client plus what identifies the service in journals and summaries. */
export interface ServiceConnection {
  client: PayoutClient;
  settings: CompleteSettings;
  /** True when the service is the built-in sandbox. */
  sandbox: boolean;
  /** Identifies the service for the history and the run lock: its identity, or "sandbox". */
  serviceKey: string;
  timing: Timing;
  close(): Promise<void>;
}

/** Resolves the settings of a run without requiring any of them (for --dry-run and config show). */
export async function loadSettings(ctx: CommandContext): Promise<Settings> {
  return resolveSettings({
    flags: { profile: ctx.globals.profile, baseUrl: ctx.globals.baseUrl },
    env: ctx.runtime.env,
    loadProfile: (name) => {
      // conf is loaded only when the config file must be read.
      return loadStore(ctx).then((store) => store.profile(name));
    },
    loadSecret: async (name) => (await openSecretStore(ctx)).get(name),
  });
}

/**
 * Opens the store of Client-Secrets: the runtime's (a fake in tests), else the system
 * keyring, whose native module is loaded only now. Rejects with KeyringError when unreachable.
 */
export async function openSecretStore(ctx: CommandContext): Promise<SecretStore> {
  if (ctx.runtime.secretStore !== undefined) return ctx.runtime.secretStore();
  return openSystemKeyring(ctx.runtime.env);
}

type ConfigStore = import('../config/store.js').ConfigStore;

/** The store of each command run, so that it is opened, and its warnings given, once. */
const stores = new WeakMap<CommandContext, Promise<ConfigStore>>();

/**
 * Opens the config store once per command (the conf module is imported on first use) and
 * warns when the file or its folder is open to other users.
 */
export function loadStore(ctx: CommandContext): Promise<ConfigStore> {
  let store = stores.get(ctx);
  if (store === undefined) {
    store = import('../config/store.js').then(({ ConfigStore }) => {
      const opened = new ConfigStore(configDir(ctx.runtime.env));
      for (const warning of opened.warnings) ctx.output.warn(warning);
      return opened;
    });
    stores.set(ctx, store);
  }
  return store;
}

/**
 * The quiet time a profile sets (`config set quiet_time`), read whenever a config file exists:
 * credentials from the environment do not make a slow service quick.
 */
async function profileQuietTime(ctx: CommandContext, profile: string): Promise<number | undefined> {
  if (!existsSync(join(configDir(ctx.runtime.env), 'config.json'))) return undefined;
  return (await loadStore(ctx)).profile(profile)?.quietTime;
}

/** Between two lines of slow requests without a live line: with many in flight, one says enough. */
const SLOW_NOTE_GAP_MS = 5_000;

/**
 * Where the client tells of a slow request: a countdown on the spinner's line, to when it is
 * given up; on a terminal without one, a line, once for each thing waited for (a lookup tried
 * again is not told again) and at most one every 5 s.
 */
function slowWaits(ctx: CommandContext): (wait: SlowWait) => () => void {
  let last = Number.NEGATIVE_INFINITY;
  const told = new Set<string>();
  return ({ what, leftMs, timeoutMs }) => {
    const now = Date.now();
    const line = told.has(what) || now - last < SLOW_NOTE_GAP_MS ? undefined : what;
    if (line !== undefined) {
      told.add(what);
      last = now;
    }
    return ctx.output.countdown(
      `${what}; it times out in`,
      leftMs,
      line && `${line} (it times out after ${timeoutMs / 1000} s)`,
    );
  };
}

/** Opens a connection to the configured service, or to an in-process sandbox with --sandbox. */
export async function openService(
  ctx: CommandContext,
  opts: { sandbox: boolean },
): Promise<ServiceConnection> {
  // undici is the heaviest module of the CLI: only commands that talk to a service load it.
  const { PayoutClient, SLOW_MS } = await import('../api/client.js');
  const trace = ctx.globals.debug ? (line: string) => ctx.output.debug(line) : undefined;
  const timing = timingFor(ctx.runtime.env.PAYOUTS_TIMEOUT);
  const timeouts = {
    responseTimeoutMs: timing.responseTimeoutMs,
    connectTimeoutMs: timing.connectTimeoutMs,
    deadlineMs: timing.deadlineMs,
    slow: slowWaits(ctx),
    // Slow is 5 s, or half the answer's timeout when that is shorter, so the note comes first.
    slowAfterMs: Math.min(SLOW_MS, Math.round(timing.responseTimeoutMs / 2)),
  };
  const proxy = {
    httpProxy: ctx.runtime.env.HTTP_PROXY ?? ctx.runtime.env.http_proxy,
    httpsProxy: ctx.runtime.env.HTTPS_PROXY ?? ctx.runtime.env.https_proxy,
    noProxy: ctx.runtime.env.NO_PROXY ?? ctx.runtime.env.no_proxy,
  };
  if (opts.sandbox) {
    const { startSandbox, SANDBOX_CREDENTIALS, parseTriggerList } = await import(
      '../sandbox/index.js'
    );
    const { env, clock } = ctx.runtime;
    const sandbox = await startSandbox({
      stateDir: stateDir(env),
      triggers: parseTriggerList(env.PAYOUTS_SANDBOX_TRIGGERS, 'PAYOUTS_SANDBOX_TRIGGERS'),
      // The run's clock: a test that moves it on sees pending payouts settle and fail late.
      ...(clock ? { now: () => clock.now() } : {}),
    });
    const settings: CompleteSettings = {
      profile: 'sandbox',
      baseUrl: sandbox.baseUrl,
      clientId: SANDBOX_CREDENTIALS.clientId,
      clientSecret: new Secret(SANDBOX_CREDENTIALS.clientSecret),
    };
    // Loopback needs no proxy; a proxy from the environment must not see sandbox traffic.
    const client = new PayoutClient({ ...settings, ...timeouts, userAgent, trace });
    return {
      client,
      settings,
      sandbox: true,
      serviceKey: SANDBOX_SERVICE_KEY,
      timing,
      close: async () => {
        await client.close();
        await sandbox.close();
      },
    };
  }
  const loaded = await loadSettings(ctx);
  const fromFile = loaded.clientId?.source === 'file' || loaded.clientSecret?.source === 'file';
  // The file is open already when a credential came from it; its path names it in errors.
  const settings = requireComplete(loaded, fromFile ? (await loadStore(ctx)).path : undefined);
  const client = await PayoutClient.open({ ...settings, ...timeouts, userAgent, trace, proxy });
  return {
    client,
    settings,
    sandbox: false,
    serviceKey: serviceKeyOf(settings.baseUrl),
    timing: withQuietTime(timing, await profileQuietTime(ctx, settings.profile)),
    close: () => client.close(),
  };
}
