/** Injected faults: rules that make the nth request to an endpoint fail in a chosen way. */
import { UsageError } from '../errors.js';

/** The endpoints of the interface, as fault rules and request counters name them. */
export type SandboxEndpoint = 'create' | 'status';

/** How a request that matches a rule fails. */
export type FaultKind = 'http500' | 'http429' | 'http413' | 'cut-after-apply' | 'cut-before-apply';

/** One injected fault. */
export interface FaultRule {
  endpoint: SandboxEndpoint | 'any';
  /** 1-based count of requests to that endpoint received by this server instance. */
  nth: number;
  kind: FaultKind;
  /** For http429: the Retry-After value in seconds (default 1). */
  retryAfterSeconds?: number;
}

const KINDS: Record<string, FaultKind> = {
  '500': 'http500',
  http500: 'http500',
  '429': 'http429',
  http429: 'http429',
  '413': 'http413',
  http413: 'http413',
  cut: 'cut-after-apply',
  'cut-after': 'cut-after-apply',
  'cut-after-apply': 'cut-after-apply',
  'cut-before': 'cut-before-apply',
  'cut-before-apply': 'cut-before-apply',
};

const FORM = 'the form is ENDPOINT:N:KIND[:SECONDS], e.g. create:3:500 or create:2:429:5';

/** Builds the error for a bad rule, naming the rule, the reason and the expected form. */
function badRule(text: string, why: string): UsageError {
  return new UsageError(`invalid fault rule ${JSON.stringify(text)}: ${why}; ${FORM}`);
}

/**
 * Parses a fault rule: 'create:3:500', 'create:2:429:5' (Retry-After 5 s), 'create:4:cut'
 * (cut after apply), 'create:4:cut-before', 'any:1:413'. Throws UsageError on bad input.
 */
export function parseFaultRule(text: string): FaultRule {
  const parts = text.trim().split(':');
  if (parts.length < 3 || parts.length > 4) {
    throw badRule(text, `expected 3 or 4 parts separated by ":", got ${parts.length}`);
  }
  const [endpointText = '', nthText = '', kindText = '', secondsText] = parts;
  const endpoint = endpointText.toLowerCase();
  if (endpoint !== 'create' && endpoint !== 'status' && endpoint !== 'any') {
    throw badRule(text, `endpoint ${JSON.stringify(endpointText)} must be create, status or any`);
  }
  if (!/^\d+$/.test(nthText) || Number(nthText) < 1 || !Number.isSafeInteger(Number(nthText))) {
    throw badRule(text, `N ${JSON.stringify(nthText)} must be a whole number from 1`);
  }
  const kind = KINDS[kindText.toLowerCase()];
  if (!kind) {
    throw badRule(
      text,
      `kind ${JSON.stringify(kindText)} must be 500, 429, 413, cut (after apply) or cut-before`,
    );
  }
  const rule: FaultRule = { endpoint, nth: Number(nthText), kind };
  if (secondsText !== undefined) {
    if (kind !== 'http429') {
      throw badRule(text, 'only a 429 rule takes a fourth part (its Retry-After seconds)');
    }
    if (!/^\d+$/.test(secondsText) || !Number.isSafeInteger(Number(secondsText))) {
      throw badRule(text, `Retry-After ${JSON.stringify(secondsText)} must be whole seconds`);
    }
    rule.retryAfterSeconds = Number(secondsText);
  }
  return rule;
}

/** Counts the requests to each endpoint and picks the fault, if any, for each new one. */
export class FaultCounter {
  private readonly counts = { create: 0, status: 0, any: 0 };

  constructor(private readonly rules: readonly FaultRule[] = []) {}

  /** Counts a request to `endpoint` and returns the first rule that matches its number. */
  next(endpoint: SandboxEndpoint): FaultRule | undefined {
    this.counts[endpoint] += 1;
    this.counts.any += 1;
    return this.rules.find(
      (r) => r.nth === this.counts[r.endpoint] && (r.endpoint === endpoint || r.endpoint === 'any'),
    );
  }

  /** Requests received so far by endpoint. */
  snapshot(): { create: number; status: number } {
    return { create: this.counts.create, status: this.counts.status };
  }
}
