/**
 * What a reference_id must be to be read back. A payout is looked up at
 * GET /api/v1/payouts/{encodeURIComponent(reference_id)}, by `payouts status` and by a send
 * confirming what it sent: intake and status both ask referenceProblem, so they never disagree.
 */
import { firstHiddenCharacter } from './characters.js';

/** Why a reference cannot be read back, and what the author of an input file should do. */
export interface ReferenceProblem {
  /** Starts with a verb, to follow `reference_id "…": `. */
  reason: string;
  fix: string;
}

// Anything outside printable ASCII sends a reference to the slower, exact checks.
const NOT_PRINTABLE_ASCII = /[^\x20-\x7e]/;
const NOT_ASCII = /[^\x00-\x7f]/;
// The same set String.prototype.trim removes, which status applies to what it reads.
const EDGE_SPACE = /^\s|\s$/;
// Zero-width characters, bidi controls and the soft hyphen: text that shows as nothing.
const INVISIBLE = /[\u00ad\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]/g;

/** The exact checks, for a reference holding something other than printable ASCII. */
function unusualProblem(ref: string): ReferenceProblem | undefined {
  const hidden = firstHiddenCharacter(ref, 'controls');
  if (hidden?.kind === 'control') {
    return {
      reason: `holds the control character ${hidden.name} at character ${hidden.at}; a reference must be visible text to be looked up again`,
      fix: 'remove it',
    };
  }
  if (hidden !== undefined) {
    return {
      reason: `holds half of a UTF-16 surrogate pair (${hidden.name}) at character ${hidden.at}, which is not a character and cannot be put in a URL`,
      fix: 'write the whole character, or remove the \\u escape',
    };
  }
  if (EDGE_SPACE.test(ref)) return edgeSpace();
  return undefined;
}

function edgeSpace(): ReferenceProblem {
  return {
    reason: 'starts or ends with white space, which is trimmed away when it is looked up',
    fix: 'remove the white space',
  };
}

/**
 * Why a reference_id cannot round-trip through the status endpoint, or undefined when it can.
 * Cheap for the ordinary reference (one pattern test), as intake asks it for every row.
 */
export function referenceProblem(ref: string): ReferenceProblem | undefined {
  if (ref === '') {
    return { reason: 'is empty', fix: 'give each payout its own reference, such as payout-0001' };
  }
  if (ref === '.' || ref === '..') {
    return {
      reason: `means ${ref === '.' ? 'this folder' : 'the parent folder'} in a URL path, so the payout could never be looked up by it`,
      fix: 'choose a reference with letters or digits, such as payout-0001',
    };
  }
  if (NOT_PRINTABLE_ASCII.test(ref)) return unusualProblem(ref);
  if (ref.charCodeAt(0) === 0x20 || ref.charCodeAt(ref.length - 1) === 0x20) return edgeSpace();
  return undefined;
}

/**
 * The text two references that look the same share, or undefined when the reference is plain
 * ASCII (which folds to itself): invisible characters removed, then NFKC normalisation.
 */
export function foldedReference(ref: string): string | undefined {
  if (!NOT_ASCII.test(ref)) return undefined;
  return ref.replace(INVISIBLE, '').normalize('NFKC');
}
