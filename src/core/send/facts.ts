/**
 * What a run's decision (decide.ts) is given: what the history holds of its staged rows, its
 * retry rows, and the service's answers. The one lookup phase asks every question of the
 * decision's "look up" fates at once (payouts recorded under another Client-Id, those
 * --check-service looks up, the originals of retry rows), and the run is decided again.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_READ_RETRY } from '../../api/retry.js';
import { type Clock, systemClock } from '../../clock.js';
import { CredentialsError } from '../../errors.js';
import { shellWord } from '../../output/display.js';
import type { PriorRow } from '../../domain/history.js';
import type { Output } from '../../output/output.js';
import { STATE_DB } from '../../state/db.js';
import { stagedLocations, stagedPayouts, stagedRetries } from '../../state/index.js';
import { historyPlace } from '../history-place.js';
import { Pace } from '../pace.js';
import { withoutPassword } from '../../state/pg/url.js';
import type { ServiceConnection } from '../service.js';
import { lookupAll } from '../status/lookup.js';
import { decide } from './decide.js';
import { type Answers, type Ask, asksOf, type Decision, type Facts, stopping } from './fates.js';
import { refusalError, type Telling } from './refusals.js';
import type { SendContext } from './staging.js';
import { payouts } from './summary.js';

/** Who the decision is for: the service (its key, and Client-Id unless the sandbox), the run. */
export interface Deciding {
  serviceKey: string;
  clientId?: string;
  runId?: string;
  /** --check-service: every staged payout is given, those the history does not know asked. */
  checkService?: boolean;
}

/**
 * What the history holds of the run's staged rows, for a decision. A send claims its own run
 * and those holding its payouts in doubt (ctx.claims); those another live send claims are
 * `live`: their payouts in doubt are left to it (decide.ts).
 */
export async function factsOf(ctx: SendContext, who: Deciding): Promise<Facts> {
  const { rows, history } = ctx.staging;
  const held = await history.prior(rows, who.serviceKey);
  const live = ctx.claims && (await ctx.claims.take(runsDecided(held, who.runId)));
  return {
    held,
    retries: stagedRetries(rows),
    ...(who.checkService ? { staged: stagedPayouts(rows) } : {}),
    ...(who.clientId === undefined ? {} : { clientId: who.clientId }),
    ...(who.runId === undefined ? {} : { runId: who.runId }),
    ...(live?.size ? { live } : {}),
    ...(ctx.opts.originalElsewhere ? { originalElsewhere: true } : {}),
  };
}

/** The runs a send decides: its own, and those that hold a payout of its rows in doubt. */
function runsDecided(held: readonly PriorRow[], runId: string | undefined): string[] {
  const runs = new Set<string>(runId === undefined ? [] : [runId]);
  for (const r of held) if (r.via === undefined && r.state !== 'done') runs.add(r.run_id);
  return [...runs];
}

/** What the history holds of a send's rows, and the send's decision from the history alone. */
export interface Read {
  facts: Facts;
  first: Decision;
}

/** Reads what the history holds of a send's rows and decides from it (no service asked yet). */
export async function readAndDecide(ctx: SendContext, who: Deciding): Promise<Read> {
  const facts = await factsOf(ctx, who);
  return { facts, first: decide(facts, 'send') };
}

/** How the words of a run's refusal find its rows, and the Client-Id the service was asked with. */
export function tellingOf(ctx: SendContext, clientId?: string): Telling {
  // A sandbox run keeps its history in the state folder, whatever history is shared.
  const stateUrl = ctx.opts.sandbox ? undefined : ctx.deps.stateUrl;
  return {
    clientId,
    history: historyPlace({ stateDir: ctx.deps.stateDir, stateUrl }),
    places: (rows) => stagedLocations(ctx.staging.rows, rows),
    retryFiles: new Set(ctx.plan.retryFiles),
  };
}

/** Throws the refusal that stops the run, if the decision holds one. */
export function refuse(decision: Decision, telling: Telling): void {
  const refused = stopping(decision);
  if (refused.length) throw refusalError(refused, telling);
}

/** What asking the service needs. */
export interface Asking {
  service: Pick<ServiceConnection, 'client'>;
  output: Output;
  clock?: Clock;
  interrupt: AbortSignal;
}

/**
 * A send's decision with the service's answers: what the history alone refuses is refused
 * before any lookup; then every question is asked at once and the run decided again (what
 * the answers refuse is the caller's to refuse, once it has said what it found).
 */
export async function decideAsking(
  facts: Facts,
  first: Decision,
  ctx: Asking & { telling: Telling },
): Promise<{ decision: Decision; asked: Ask[] }> {
  refuse(first, ctx.telling);
  const asked = asksOf(first);
  if (!asked.length) return { decision: first, asked };
  return { decision: decide(facts, 'send', await lookUp(asked, ctx)), asked };
}

/**
 * The one lookup phase: each reference asked once, at the service's pace (4 at first, up to
 * 16), before anything is asked or sent. A rejected secret stops it (exit 3), as a stop does.
 */
export async function lookUp(asks: Ask[], ctx: Asking): Promise<Answers> {
  const payoutRefs = asks.filter((a) => a.payout).map((a) => a.ref);
  const originals = [...new Set(asks.filter((a) => !a.payout).map((a) => a.ref))];
  if (payoutRefs.length) {
    ctx.output.info(`Looking up ${payouts(payoutRefs.length)} at the service before sending…`);
  }
  if (originals.length) {
    const n = originals.length;
    ctx.output.info(
      `Looking up ${n === 1 ? 'the payout' : `the ${n} payouts`} the retry rows retry at the service before sending…`,
    );
  }
  const clock = ctx.clock ?? systemClock;
  const outcomes = await lookupAll(
    ctx.service.client,
    [...new Set([...payoutRefs, ...originals])],
    {
      concurrency: 16,
      pace: new Pace({ initial: 4, max: 16, clock }),
      retry: DEFAULT_READ_RETRY,
      signal: ctx.interrupt,
      sleep: (ms, signal) => clock.sleep(ms, signal),
      now: () => clock.now(),
    },
  );
  return new Map(outcomes.map((o) => [o.reference_id, o]));
}

/**
 * Checks the credentials of a run that has nothing to send with one status lookup, so that a
 * wrong secret is told now rather than on the day something is sent. Only a rejection of the
 * credentials stops the run; any other answer (found, not found, unreachable) tells nothing.
 */
export async function checkCredentials(
  client: { getPayout(ref: string, signal?: AbortSignal): Promise<unknown> },
  reference: string,
  signal: AbortSignal,
): Promise<void> {
  try {
    await client.getPayout(reference, signal);
  } catch (error) {
    if (error instanceof CredentialsError) throw error;
  }
}

/**
 * The warning of a --yes run whose history holds no run of the service: with a shared one,
 * the runs sent before it was shared (this folder's state.db among them) are pushed into it.
 */
export function noHistoryWarning(
  history: string,
  service: { settings: { baseUrl: string } },
  deps: { stateUrl?: string; stateDir: string },
): string {
  const head = `${history} holds no run of ${service.settings.baseUrl} yet`;
  const check = 'or pass --check-service to look each payout up at the service first';
  if (deps.stateUrl === undefined) {
    return `${head}: payouts sent from another machine, runner or folder would be sent again. Share one history (PAYOUTS_STATE_URL), ${check}`;
  }
  // The URL without its password, which a command line must not carry (PGPASSWORD, ~/.pgpass).
  const push = `payouts state push --to ${shellWord(withoutPassword(deps.stateUrl))}`;
  const local = join(deps.stateDir, STATE_DB);
  return existsSync(local)
    ? `${head}, but ${local} holds the runs sent from this folder: their payouts would be sent again. Copy them in first with \`${push}\` (its password in PGPASSWORD or ~/.pgpass), ${check}`
    : `${head}: payouts sent before it was shared would be sent again. Copy each machine's runs in with \`${push}\` there (its password in PGPASSWORD or ~/.pgpass), ${check}`;
}
