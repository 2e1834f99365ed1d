/**
 * The service's lock as a send takes it: at once, or in turn with --wait (the queue of those
 * waiting, on a live line naming who holds it and how many are ahead), and, for a send with
 * payouts in doubt to decide, only once it has read them back (issue 51).
 */
import { type Clock, systemClock } from '../../clock.js';
import type { LockQueue, LockRequest, ServiceLock } from '../../domain/history.js';
import { BusyError, InterruptedError, PayoutsError } from '../../errors.js';
import { count } from '../../output/display.js';
import type { Output } from '../../output/output.js';
import { runIdFor } from '../../state/index.js';
import type { ServiceConnection } from '../service.js';
import { type Decided, readBackAhead } from './sending.js';
import type { SendContext } from './staging.js';

/** How often a send waiting with --wait tries the service's lock again. */
const RETRY_MS = 1_000;
/** How often the first in line tries: the lock it is next for stays idle no longer than this. */
const NEXT_RETRY_MS = 200;

/** What waiting for another send's lock needs. */
export interface LockWait {
  /** At most this long; Infinity waits until the lock is free or the run is stopped. */
  seconds: number;
  output: Output;
  clock: Clock;
  interrupt: AbortSignal;
}

/** "; 2 sends wait before this one", or nothing when none does. */
function aheadText(busy: BusyError): string {
  if (busy.ahead <= 0) return '';
  return `; ${count(busy.ahead, 'send waits', 'sends wait')} before this one`;
}

/** The live line while waiting: whom for, and how many are ahead (or that the history is away). */
function waitingLine(busy: BusyError): string {
  if (busy.cause instanceof PayoutsError) return `Waiting for ${busy.holder}: reconnecting`;
  return `Waiting for the send of ${busy.holder} to finish${aheadText(busy)}`;
}

/** What a try gave: the lock, or why not yet (a BusyError, the history unreachable among them). */
async function attempt(place: LockQueue): Promise<ServiceLock | BusyError> {
  try {
    return await place.take();
  } catch (error) {
    if (error instanceof BusyError) return error;
    throw error;
  }
}

/**
 * Past the limit: the last BusyError (exit 8), or, when the history could not be reached at
 * the last try, why (exit 7).
 */
function gaveUp(busy: BusyError): PayoutsError {
  return busy.cause instanceof PayoutsError ? busy.cause : busy;
}

/**
 * `send --wait`: joins the queue of the sends waiting for the service's lock and takes it in
 * turn; while others hold it or asked first, tries again every second (the first in line five
 * times a second), with a live line naming the holder, how many wait ahead (and the time left,
 * when limited). Past the limit, the last
 * BusyError; a stop while waiting, InterruptedError: nothing was sent either way. The place is
 * given up however the wait ends.
 */
export async function waitForLock(
  join: () => Promise<LockQueue>,
  how: LockWait,
): Promise<ServiceLock> {
  const place = await join();
  try {
    const first = await attempt(place);
    if (!(first instanceof BusyError)) return first;
    return await waitTurn(place, first, how);
  } finally {
    await place.leave().catch(() => {});
  }
}

/** The wait itself, once the first try found the lock held (or others ahead). */
async function waitTurn(place: LockQueue, first: BusyError, how: LockWait): Promise<ServiceLock> {
  const { clock, output } = how;
  let busy = first;
  const holders = new Set([busy.holder]);
  const began = clock.now();
  const until = began + how.seconds * 1000;
  const limited = Number.isFinite(until);
  output.info(
    `Another send to this service is running (${busy.holder}): waiting for it to finish${aheadText(busy)}${limited ? `, at most ${how.seconds} s` : ''}; Ctrl-C stops waiting, nothing is sent`,
  );
  const progress = await output.progress(waitingLine(busy));
  const endWait = limited ? progress.wait('gives up in', until - clock.now()) : () => {};
  try {
    for (;;) {
      const left = until - clock.now();
      if (left <= 0) throw gaveUp(busy);
      try {
        const every = busy.ahead === 0 ? NEXT_RETRY_MS : RETRY_MS;
        await clock.sleep(Math.min(every, left), how.interrupt);
      } catch {
        throw new InterruptedError('stopped while waiting for another send: nothing was sent');
      }
      const got = await attempt(place);
      if (got instanceof BusyError) {
        busy = got;
        if (!(busy.cause instanceof PayoutsError)) holders.add(busy.holder);
        progress.update(waitingLine(busy));
        continue;
      }
      endWait();
      progress.stop();
      // Those seen holding it, or, when one came and went between two tries, those counted
      // ahead of this send when it joined the queue and the holder then.
      const went = Math.max(holders.size, first.ahead + 1);
      output.info(waitedLine(went === 1 ? [...holders] : went, clock.now() - began));
      return got;
    }
  } finally {
    endWait();
    progress.stop();
  }
}

/**
 * The line when the wait ends: "The other send (…) finished after 31 s; this one goes on", or,
 * when several went first, "The 3 sends ahead of this one finished after 2 min 5 s; …".
 */
export function waitedLine(holders: string | string[] | number, ms: number): string {
  const s = Math.max(1, Math.round(ms / 1000));
  const took = s < 120 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
  const who = typeof holders === 'string' ? [holders] : holders;
  const n = typeof who === 'number' ? who : who.length;
  const them =
    typeof who !== 'number' && n === 1
      ? `The other send (${who[0]})`
      : `The ${n} sends ahead of this one`;
  return `${them} finished after ${took}; this one goes on`;
}

/** Who asks for the service's lock, or claims runs: this process, its command, its run. */
export function lockRequest(ctx: SendContext, serviceKey: string): LockRequest {
  const { deps, plan } = ctx;
  const clock = deps.clock ?? systemClock;
  return {
    pid: deps.pid,
    command: deps.commandLine,
    startedAt: new Date(clock.now()).toISOString(),
    runId: runIdFor(serviceKey, plan.inputHash),
  };
}

/**
 * The service's lock, naming this run; waiting `seconds` (--wait's by default), its place in
 * the queue of those waiting, waited for on a live line naming who holds it and how many are
 * ahead (wait-lock.ts).
 */
export function takeLock(
  ctx: SendContext,
  service: Pick<ServiceConnection, 'serviceKey'>,
  seconds = ctx.opts.waitSeconds,
): Promise<ServiceLock> {
  const { deps } = ctx;
  const me = lockRequest(ctx, service.serviceKey);
  const { history } = ctx.staging;
  if (seconds === undefined) return history.lockService(service.serviceKey, me);
  return waitForLock(() => history.joinLockQueue(service.serviceKey, me), {
    seconds,
    output: ctx.output,
    clock: deps.clock ?? systemClock,
    interrupt: deps.interrupt,
  });
}

/**
 * A send with payouts in doubt to decide reads them back before it takes the service's lock,
 * so the sends waiting for it go on meanwhile, then waits for it in turn (issue 51). Without
 * --wait the lock is asked for first (`locking`, when already asked), so a busy service is
 * exit 8 before anything is read.
 */
export async function readBackFirst<S extends Decided>(
  ctx: SendContext,
  service: ServiceConnection,
  shown: S,
  locking?: Promise<ServiceLock>,
): Promise<{ shown: S; lock: ServiceLock }> {
  const { opts } = ctx;
  if (opts.waitSeconds === undefined) await (await (locking ?? takeLock(ctx, service))).release();
  const ahead = await readBackAhead(ctx, service, shown);
  const lock = await takeLock(ctx, service, opts.waitSeconds ?? Number.POSITIVE_INFINITY);
  return { shown: { ...shown, ahead }, lock };
}
