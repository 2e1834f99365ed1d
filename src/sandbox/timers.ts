/** Timers that all stop at once on close(), so none outlives a closed sandbox or sender. */
export class Timers {
  private readonly pending = new Set<NodeJS.Timeout>();
  private stopped = false;

  /** Whether close() was called. */
  get closed(): boolean {
    return this.stopped;
  }

  /** Runs `fn` after `ms`, unless the server closes first. */
  later(ms: number, fn: () => void): void {
    if (this.stopped) return;
    const timer = setTimeout(() => {
      this.pending.delete(timer);
      fn();
    }, ms);
    timer.unref();
    this.pending.add(timer);
  }

  /** Waits `ms` (the configured latency); never resolves once closed, as the socket is gone. */
  pause(ms: number): Promise<void> {
    return ms > 0 ? new Promise((resolve) => this.later(ms, resolve)) : Promise.resolve();
  }

  /** Cancels every timer; later() does nothing from now on. */
  close(): void {
    this.stopped = true;
    for (const t of this.pending) clearTimeout(t);
    this.pending.clear();
  }
}
