/** The service's lock of a send: one sending run per service; `--wait` waits for another's. */
import { type Clock, systemClock } from '../../clock.js';
import { BusyError, InterruptedError } from '../../errors.js';
import type { Output } from '../../output/output.js';
import { runIdFor } from '../../state/index.js';
import type { ServiceConnection } from '../service.js';
import type { SendContext } from './staging.js';

/** The service's lock, naming this run; with --wait, waited for on a live line naming who holds it. */
export function takeLock(
  ctx: SendContext,
  service: Pick<ServiceConnection, 'serviceKey'>,
): Promise<{ release(): Promise<void> }> {
  const { deps, plan, opts } = ctx;
  const clock = deps.clock ?? systemClock;
  const take = () =>
    ctx.staging.history.lockService(service.serviceKey, {
      pid: deps.pid,
      command: deps.commandLine,
      startedAt: new Date(clock.now()).toISOString(),
      runId: runIdFor(service.serviceKey, plan.inputHash),
    });
  if (opts.waitSeconds === undefined) return take();
  return waitForLock(take, {
    seconds: opts.waitSeconds,
    output: ctx.output,
    clock,
    interrupt: deps.interrupt,
  });
}

/** How often a send waiting with --wait tries the service's lock again. */
const RETRY_MS = 1_000;

/** What waiting for another send's lock needs. */
export interface LockWait {
  /** At most this long; Infinity waits until the lock is free or the run is stopped. */
  seconds: number;
  output: Output;
  clock: Clock;
  interrupt: AbortSignal;
}

/**
 * `send --wait`: takes the lock, and while another send holds it tries again every second,
 * with a live line naming the holder (and the time left, when limited). Past the limit, the
 * last BusyError; a stop while waiting, InterruptedError: nothing was sent either way.
 */
export async function waitForLock<L>(take: () => Promise<L>, how: LockWait): Promise<L> {
  let busy: BusyError;
  try {
    return await take();
  } catch (error) {
    if (!(error instanceof BusyError)) throw error;
    busy = error;
  }
  const { clock, output } = how;
  const began = clock.now();
  const until = began + how.seconds * 1000;
  const limited = Number.isFinite(until);
  output.info(
    `Another send to this service is running (${busy.holder}): waiting for it to finish${limited ? `, at most ${how.seconds} s` : ''}; Ctrl-C stops waiting, nothing is sent`,
  );
  const line = (holder: string) => `Waiting for the send of ${holder} to finish`;
  const progress = await output.progress(line(busy.holder));
  const endWait = limited ? progress.wait('gives up in', until - clock.now()) : () => {};
  try {
    for (;;) {
      const left = until - clock.now();
      if (left <= 0) throw busy;
      try {
        await clock.sleep(Math.min(RETRY_MS, left), how.interrupt);
      } catch {
        throw new InterruptedError('stopped while waiting for another send: nothing was sent');
      }
      let taken: L;
      try {
        taken = await take();
      } catch (error) {
        if (!(error instanceof BusyError)) throw error;
        busy = error;
        progress.update(line(busy.holder));
        continue;
      }
      endWait();
      progress.stop();
      output.info(waitedLine(busy.holder, clock.now() - began));
      return taken;
    }
  } finally {
    endWait();
    progress.stop();
  }
}

/** The line when the wait ends: "The other send (…) finished after 31 s; this one goes on". */
export function waitedLine(holder: string, ms: number): string {
  const s = Math.max(1, Math.round(ms / 1000));
  const took = s < 120 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
  return `The other send (${holder}) finished after ${took}; this one goes on`;
}
