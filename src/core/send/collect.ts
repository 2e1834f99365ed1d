import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { PAYOUT_V8_FLAGS } from '../../v8-flags.js';

/** Sets the V8 flags of a send (see PAYOUT_V8_FLAGS): at its start, before any row is read. */
export function setSendV8Flags(): void {
  setFlagsFromString(PAYOUT_V8_FLAGS);
}

/** V8's gc(), fetched once; null when this runtime would not give it. */
let fullGc: (() => void) | null | undefined;

/**
 * Runs a full garbage collection. V8 returns the memory of a typed array only when a full
 * collection finds it dead, and a large send makes few of them: the blocks the reference
 * index has sorted, and the sorted list once dropped (8 bytes a row each), stayed resident
 * to the end of the run.
 */
export function collectGarbage(): void {
  if (fullGc === undefined) {
    try {
      // The flag only has to be on while gc() is looked up; V8 keeps the function.
      setFlagsFromString('--expose-gc');
      fullGc = runInNewContext('gc') as () => void;
    } catch {
      fullGc = null;
    } finally {
      setFlagsFromString('--no-expose-gc');
    }
  }
  fullGc?.();
}
