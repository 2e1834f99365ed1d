import type { Clock } from '../../src/clock.js';

/**
 * A discrete-event clock: sleeps are timers on a virtual time line, and run() fires them in
 * order, letting every promise settle between two timers. Many concurrent tasks then see one
 * consistent time, and a simulated minute takes milliseconds.
 */
export class SimClock implements Clock {
  t = 0;
  private timers: Array<{ at: number; seq: number; fire: () => void }> = [];
  private seq = 0;

  now = (): number => this.t;

  sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
    new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      this.timers.push({ at: this.t + Math.max(0, ms), seq: this.seq++, fire: resolve });
    });

  /** Fires timers in time order until none is left and every task has settled. */
  async run(done: Promise<unknown>): Promise<void> {
    let finished = false;
    void done.then(() => {
      finished = true;
    });
    for (;;) {
      for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
      if (finished) return;
      if (!this.timers.length) throw new Error('simulation stalled: no timer and not finished');
      this.timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.timers.shift()!;
      this.t = Math.max(this.t, next.at);
      next.fire();
    }
  }
}
