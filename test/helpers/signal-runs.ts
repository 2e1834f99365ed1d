/**
 * The set-up of the signal tests (issue 26, test/e2e/signals*.test.ts): a loopback ledger
 * service, a profile stored by `config set-credentials`, and a run of 20 payouts sent two at a
 * time, whose third request marks its arrival.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { LedgerService, ledgerPerTest } from './ledger-service.js';
import { writeRun } from './sandbox.js';
import { checkJsonDocument } from './json-schema.js';
import { FakeClock, runMain } from './main.js';
import { type Screen, storeProfile } from './terminal.js';
import type { SendDoc } from '../../src/core/documents.js';

export type { SendDoc };

export interface Setup {
  svc: LedgerService;
  home: { dir: string; env: Record<string, string> };
  file: string;
  refs: string[];
  marker: string;
  /** Answers a held third request now (see setup's `answer`). */
  release(): void;
  /** Answers a held third request once this file exists (a pseudo-terminal's `touch` step). */
  releaseFile: string;
}

/** What the run says at the first stop while a request is in flight (the engine's notice). */
export const STOPPING = 'stopping: no new request starts';

/**
 * A ledger service whose third request marks its arrival and is answered `answer` ms later,
 * or, with 'held', only once the test lets it go (release() or releaseFile): after the run
 * has said it stops, so the stop meets that request in flight however busy the machine is.
 */
export async function setup(
  fixture: ReturnType<typeof ledgerPerTest>,
  answer: number | 'held' = 400,
): Promise<Setup> {
  const home = fixture.home();
  const marker = join(home.dir, 'third-request');
  const releaseFile = join(home.dir, 'release-third-request');
  let release = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const svc = await fixture.start((n) => {
    if (n !== 3) return {};
    writeFileSync(marker, '');
    if (answer !== 'held') return { delayMs: answer };
    // A bound only so that a run that never says it stops ends the test instead of hanging it.
    const until = Date.now() + 60_000;
    const poll = setInterval(() => {
      if (existsSync(releaseFile) || Date.now() > until) release();
    }, 10);
    return { hold: released.finally(() => clearInterval(poll)) };
  });
  await storeProfile(home.env, svc.url);
  const { file, refs } = writeRun(home.dir, 20);
  return { svc, home, file, refs, marker, release, releaseFile };
}

export const sendArgs = (s: Pick<Setup, 'file'>, ...more: string[]) => [
  'send',
  s.file,
  '--chunk-size',
  '2',
  '--concurrency',
  '1',
  ...more,
];

/** Every row of a --report, by reference: its status column. */
export function reportStatuses(path: string): Map<string, string> {
  const [header, ...lines] = readFileSync(path, 'utf8')
    .replace(/^\uFEFF/, '')
    .trim()
    .split(/\r?\n/);
  const cols = header!.split(',');
  const ref = cols.indexOf('reference_id');
  const status = cols.indexOf('status');
  return new Map(lines.map((l) => [l.split(',')[ref]!, l.split(',')[status]!]));
}

/**
 * After a stop: nothing applied twice, and a second run sends the rest and exits 0. The stop
 * is the process under test; the second run reads what it left, in this process, its quiet
 * times on a fake clock that goes on from now (the stopped run's requests were sent before).
 */
export async function finishesOnceOnRerun(
  s: Pick<Setup, 'svc' | 'home' | 'file' | 'refs'>,
  env: Record<string, string> = {},
): Promise<void> {
  const again = await runMain(sendArgs(s, '--yes'), {
    env: { ...s.home.env, ...env },
    clock: new FakeClock(Date.now()),
  });
  expect(again.stderr).toMatch(/20 payouts: 20 succeeded, 0 failed/);
  expect(again.code).toBe(0);
  expect([...s.svc.held.keys()].sort()).toEqual([...s.refs].sort());
  expect(s.svc.appliedTwice()).toEqual([]);
}

/** What a --json document's rows and counts say of a stopped run. */

/**
 * The --json document a run printed on a terminal, among the lines around it on stderr;
 * checked against its schema. Fails the test when there is none.
 */
export function documentOnScreen(args: string[], screen: Screen): SendDoc {
  // A Ctrl-C the terminal echoed (^C) may precede it on its line.
  const start = screen.output.indexOf('{\n  "schema_version"');
  const end = screen.output.indexOf('\n}\n', start);
  if (start === -1 || end === -1)
    throw new Error(`no --json document on screen:\n${screen.output}`);
  const stdout = screen.output.slice(start, end + 2);
  checkJsonDocument(args, { code: screen.code, stdout, stderr: '' });
  return JSON.parse(stdout) as SendDoc;
}

/** How many rows have each status. */
export function statusCounts(rows: Iterable<{ status: string }>): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of rows) counts[r.status] = (counts[r.status] ?? 0) + 1;
  return counts;
}
