import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { checkJsonDocument } from '../helpers/json-schema.js';
import { ledgerPerTest } from '../helpers/ledger-service.js';
import {
  finishesOnceOnRerun,
  reportStatuses,
  type SendDoc,
  STOPPING,
  sendArgs,
  setup,
  statusCounts,
} from '../helpers/signal-runs.js';

// Issue 31: a job runner that cancels a job by killing what it started (`npx payouts …`, i.e.
// npm, which runs payouts through `sh -c`) with SIGKILL. payouts must stop as on a hang-up.
// Not on a pseudo-terminal: there npm would be the session leader, and its death would send
// SIGHUP itself, which is not what a runner without a terminal does.

const fixture = ledgerPerTest();
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Runs `npx payouts ARGS` in this checkout; kills npm with SIGKILL once `marker` exists, and
 * calls `stopping` once payouts says it stops.
 */
function killNpxMidRun(
  args: string[],
  env: Record<string, string>,
  marker: string,
  stopping: () => void,
): Promise<{ stdout: string; stderr: string }> {
  // Offline and without the update check: the tests contact nothing but 127.0.0.1.
  const npmEnv = { npm_config_offline: 'true', npm_config_update_notifier: 'false' };
  const child = spawn('npx', ['payouts', ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', LANG: 'C.UTF-8', ...npmEnv, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    // A session of its own, without the test's terminal, as a job runner starts a job.
    detached: true,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    stdout += d;
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
    if (stderr.includes(STOPPING)) stopping();
  });
  const poll = setInterval(() => {
    if (!existsSync(marker)) return;
    clearInterval(poll);
    child.kill('SIGKILL');
  }, 20);
  // The pipes close when payouts, which holds them too, has exited.
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', () => {
      clearInterval(poll);
      resolve({ stdout, stderr });
    });
  });
}

describe('the process that started the run is killed (SIGKILL)', () => {
  it('stops as on a hang-up: the request in flight finishes, every row reported, nothing more sent', async () => {
    // The request in flight is answered only once payouts has said it stops (its parent
    // check saw npm go), so the stop meets it in flight however busy the machine is.
    const s = await setup(fixture, 'held');
    const report = join(s.home.dir, 'report.csv');
    const args = sendArgs(s, '--yes', '--json', '--report', report);
    const r = await killNpxMidRun(args, s.home.env, s.marker, s.release);
    // npm is gone: the document's exit_code is what the job could read.
    const doc = JSON.parse(r.stdout) as SendDoc;
    checkJsonDocument(['send', '--json'], { code: doc.exit_code, ...r });
    expect(doc.exit_code).toBe(130);
    expect(statusCounts(doc.results)).toEqual({ success: 6, not_sent: 14 });
    expect(reportStatuses(report).size).toBe(20);
    expect(r.stderr).toMatch(/^Interrupted: 6 of 20 payouts sent/m);
    // payouts has exited (its pipes closed): three requests, and no more.
    expect(s.svc.bodies).toHaveLength(3);
    expect(s.svc.held.size).toBe(6);
    await finishesOnceOnRerun(s);
  });
});
