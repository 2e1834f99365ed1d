import { readFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openRun, tempStateDir } from './helpers.js';

/** Whether the file on disk holds the intent line of a request right now. */
function onDisk(path: string, req: number): boolean {
  return readFileSync(path, 'utf8').includes(`{"t":"intent","req":${req},`);
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('RunJournal: group commit', () => {
  it('shares one fsync between intents recorded together, each durable when it resolves', async () => {
    const stateDir = await tempStateDir();
    const j = await openRun(stateDir);
    const base = j.syncCount;
    const n = 20;
    const durable = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        // Read the file the moment the promise resolves, before anything else runs.
        j.recordIntent(i + 1, [{ ref: `R${i}`, hash: 'h' }]).then(() => onDisk(j.path, i + 1)),
      ),
    );
    expect(durable).toEqual(Array.from({ length: n }, () => true));
    expect(j.syncCount - base).toBeLessThan(n);
    expect(j.syncCount - base).toBe(1);
  });

  it('batches intents that arrive while a write is under way (4 writers)', async () => {
    const stateDir = await tempStateDir();
    const j = await openRun(stateDir);
    const base = j.syncCount;
    let nextReq = 1;
    const perWriter = 50;
    const notDurable: number[] = [];
    const writer = async (w: number) => {
      for (let k = 0; k < perWriter; k++) {
        const req = nextReq++;
        await j.recordIntent(req, [{ ref: `W${w}-${k}`, hash: 'h' }]);
        if (!onDisk(j.path, req)) notDurable.push(req);
      }
    };
    await Promise.all([0, 1, 2, 3].map(writer));
    expect(notDurable).toEqual([]);
    const total = 4 * perWriter;
    // Four writers keep about four intents per write: far fewer fsyncs than intents.
    expect(j.syncCount - base).toBeLessThanOrEqual(total / 2);
    expect(j.inFlight()).toHaveLength(total);
  });

  it('counts real datasync calls, one per group commit', async () => {
    const stateDir = await tempStateDir();
    const probe = await open(`${stateDir}-probe`, 'w');
    const proto = Object.getPrototypeOf(probe) as { datasync: () => Promise<void> };
    await probe.close();
    const spy = vi.spyOn(proto, 'datasync');
    const j = await openRun(stateDir);
    expect(spy).toHaveBeenCalledTimes(1); // the header
    await Promise.all([
      j.recordIntent(1, [{ ref: 'A', hash: 'h' }]),
      j.recordIntent(2, [{ ref: 'B', hash: 'h' }]),
      j.recordIntent(3, [{ ref: 'C', hash: 'h' }]),
    ]);
    expect(spy).toHaveBeenCalledTimes(2);
    expect(j.syncCount).toBe(2);
    // Buffered records cost nothing until flushed; a flush with nothing new costs nothing.
    j.recordOutcome(1, [{ ref: 'A', status: 'success' }]);
    expect(spy).toHaveBeenCalledTimes(2);
    await j.flush();
    await j.flush();
    expect(spy).toHaveBeenCalledTimes(3);
    await j.close();
    expect(spy).toHaveBeenCalledTimes(3);
  });

  it('writes records in the order they were made, across batches', async () => {
    const stateDir = await tempStateDir();
    const j = await openRun(stateDir);
    const first = j.recordIntent(1, [{ ref: 'A', hash: 'h' }]);
    j.recordOutcome(1, [{ ref: 'A', status: 'success' }]);
    const second = j.recordIntent(2, [{ ref: 'B', hash: 'h' }]);
    await Promise.all([first, second]);
    await j.recordIntent(3, [{ ref: 'C', hash: 'h' }]);
    j.recordNotApplied(3, ['C'], '429');
    await j.close();
    const types = readFileSync(j.path, 'utf8')
      .trim()
      .split('\n')
      .map((l) => {
        const r = JSON.parse(l) as { t: string; req?: number };
        return `${r.t}${r.req ?? ''}`;
      });
    expect(types).toEqual(['run', 'intent1', 'outcome1', 'intent2', 'intent3', 'not_applied3']);
  });
});
