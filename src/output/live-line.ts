import { count } from './display.js';

/** A wait shown on the live line: what it waits for, and when it ends (ms since the epoch). */
interface Wait {
  what: string;
  until: number;
}

/**
 * The text of a spinner's line: what the command is doing, then the soonest of the waits
 * going on with its countdown, so a person sees that a wait moves and how long is left.
 */
export class LiveLine {
  private base: string;
  private readonly waits = new Set<Wait>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    text: string,
    private readonly show: (text: string) => void,
    private readonly now: () => number = Date.now,
  ) {
    this.base = text;
  }

  /** What the command is doing now. */
  update(text: string): void {
    this.base = text;
    this.render();
  }

  /** Shows a wait of `ms` with a countdown until the returned function ends it. */
  wait(what: string, ms: number): () => void {
    const w = { what, until: this.now() + ms };
    this.waits.add(w);
    // Redrawn every second, so the countdown moves while nothing else happens.
    this.timer ??= setInterval(() => this.render(), 1000).unref();
    this.render();
    return () => {
      if (!this.waits.delete(w)) return;
      if (!this.waits.size) this.stop();
      this.render();
    };
  }

  /** Stops the countdown's redraws. */
  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** The line as it stands now. */
  get text(): string {
    if (!this.waits.size) return this.base;
    const soonest = [...this.waits].sort((a, b) => a.until - b.until)[0]!;
    const left = Math.max(0, Math.ceil((soonest.until - this.now()) / 1000));
    const n = this.waits.size - 1;
    const more = n ? ` (and ${count(n, 'more wait')})` : '';
    return `${this.base} · ${soonest.what} ${left} s${more}`;
  }

  private render(): void {
    this.show(this.text);
  }
}
