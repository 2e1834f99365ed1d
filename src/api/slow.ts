/** A slow exchange told while it lasts: what it waits for, and until when, for a countdown. */

/** A slow exchange, as the client's `slow` is told of it. */
export interface SlowWait {
  /** "waiting for 127.0.0.1:8787 to answer a create request". */
  what: string;
  /** Milliseconds from now until the exchange is given up. */
  leftMs: number;
  /** What it is allowed in all, in milliseconds, for a line that cannot count down. */
  timeoutMs: number;
}

/** An exchange watched for slowness: its answer's headers came, or it ended. */
export interface SlowWatch {
  answered(): void;
  end(): void;
}

/**
 * Tells `slow` what an exchange waits for once it has taken `afterMs`, and until when: its
 * answer's timeout until the headers come; a body slow to follow them is told again, counted
 * to the deadline. The function `slow` returns ends the wait it was told.
 */
export function watchSlow(
  slow: (wait: SlowWait) => () => void,
  exchange: { method: string; url: string; started: number },
  limits: { afterMs: number; answerMs: number; deadlineMs: number },
): SlowWatch {
  const { method, url, started } = exchange;
  const what =
    method === 'POST'
      ? 'a create request'
      : `the lookup of ${decodeURIComponent(url.slice(url.lastIndexOf('/') + 1))}`;
  const waiting = `waiting for ${new URL(url).host} to answer ${what}`;
  let limit = limits.answerMs;
  let ending: (() => void) | undefined;
  const show = () => {
    const leftMs = Math.max(0, limit - (Date.now() - started));
    ending = slow({ what: waiting, leftMs, timeoutMs: limit });
  };
  // The wait must never keep the process alive on its own.
  let timer = setTimeout(show, limits.afterMs).unref();
  return {
    answered: () => {
      limit = limits.deadlineMs;
      if (!ending) return;
      ending();
      ending = undefined;
      timer = setTimeout(show, limits.afterMs).unref();
    },
    end: () => {
      clearTimeout(timer);
      ending?.();
      ending = undefined;
    },
  };
}
