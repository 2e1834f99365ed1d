import { describe, expect, it } from 'vitest';
import {
  BUILT_IN_TRIGGERS,
  parseTriggerList,
  parseTriggerRule,
  triggerFor,
  triggeredStatus,
  triggerJson,
  triggerMessage,
} from '../../../src/sandbox/triggers.js';

describe('built-in triggers', () => {
  it('picks the status from the recipient, case-insensitively', () => {
    expect(triggeredStatus('bob+failed@example.com')).toBe('failed');
    expect(triggeredStatus('BOB+CANCELED@example.com')).toBe('canceled');
    expect(triggeredStatus('+15550100+Pending')).toBe('pending');
    expect(triggeredStatus('bob@example.com')).toBe('success');
    expect(triggeredStatus('bob-failed@example.com')).toBe('success');
  });

  it('prefers failed over canceled over pending', () => {
    expect(triggeredStatus('x+pending+failed')).toBe('failed');
    expect(triggeredStatus('x+pending+canceled')).toBe('canceled');
  });

  it('answers a late failure pending, and a return success, with what each turns into', () => {
    expect(triggerFor('ana+late-failed@example.com')).toEqual({
      match: '+late-failed',
      status: 'pending',
      later: 'failed',
    });
    expect(triggerFor('ANA+LATE-CANCELED')).toMatchObject({ status: 'pending', later: 'canceled' });
    expect(triggerFor('bo+returned@example.com')).toMatchObject({
      status: 'success',
      later: 'failed',
    });
    expect(triggerFor('bo+recalled@example.com')).toMatchObject({
      status: 'success',
      later: 'canceled',
    });
    expect(triggerFor('x+pending')).toMatchObject({ status: 'pending', later: 'success' });
    expect(triggerFor('bob@example.com')).toBeUndefined();
  });

  it('keeps "+late-failed" apart from "+failed": it is no immediate failure', () => {
    expect(triggeredStatus('x+late-failed')).toBe('pending');
    expect(triggeredStatus('x+late-canceled')).toBe('pending');
    // An immediate failure still wins over a later one.
    expect(triggeredStatus('x+late-failed+failed')).toBe('failed');
  });

  it('gives no delay of their own: the pending delay applies', () => {
    expect(BUILT_IN_TRIGGERS.every((t) => t.afterMs === undefined)).toBe(true);
  });
});

describe('trigger messages', () => {
  it('say what was asked for, and what a pending payout turns into unless success', () => {
    expect(triggerMessage(triggerFor('x+failed'))).toBe(
      'Sandbox trigger: recipient asked for failed',
    );
    expect(triggerMessage(triggerFor('x+pending'))).toBe(
      'Sandbox trigger: recipient asked for pending',
    );
    expect(triggerMessage(triggerFor('x+late-failed'))).toBe(
      'Sandbox trigger: recipient asked for pending, then failed',
    );
  });

  it('leave a success silent, even one to be returned', () => {
    expect(triggerMessage(triggerFor('x+returned'))).toBeUndefined();
    expect(triggerMessage(undefined)).toBeUndefined();
  });
});

describe('parseTriggerRule', () => {
  it('reads MATCH:STATUS[:LATER][:MS]', () => {
    expect(parseTriggerRule('+bounce:success:failed:5000')).toEqual({
      match: '+bounce',
      status: 'success',
      later: 'failed',
      afterMs: 5000,
    });
    expect(parseTriggerRule('@blocked.example:failed')).toEqual({
      match: '@blocked.example',
      status: 'failed',
    });
    expect(parseTriggerRule(' x:PENDING:Canceled ')).toEqual({
      match: 'x',
      status: 'pending',
      later: 'canceled',
    });
  });

  it('settles a pending rule without LATER as success, after its own delay when given', () => {
    expect(parseTriggerRule('+slow:pending')).toEqual({
      match: '+slow',
      status: 'pending',
      later: 'success',
    });
    expect(parseTriggerRule('+slow:pending:120000')).toEqual({
      match: '+slow',
      status: 'pending',
      later: 'success',
      afterMs: 120000,
    });
  });

  it('refuses changes a payout cannot make, naming the rule and the form', () => {
    expect(() => parseTriggerRule('x:failed:success')).toThrow(
      /--trigger "x:failed:success": a failed payout is final.*MATCH:STATUS\[:LATER\]\[:MS\]/,
    );
    expect(() => parseTriggerRule('x:success:success')).toThrow(/not success/);
    expect(() => parseTriggerRule('x:pending:pending')).toThrow(/not pending/);
    expect(() => parseTriggerRule('x:success:5000')).toThrow(
      /a delay applies to a payout that changes later/,
    );
  });

  it('names one payout by its reference_id, exactly, with ref=', () => {
    const rules = [parseTriggerRule('ref=JAN-0003:pending:failed'), ...BUILT_IN_TRIGGERS];
    expect(triggerFor('ana@example.com', rules, 'JAN-0003')).toMatchObject({
      match: 'ref=JAN-0003',
      status: 'pending',
      later: 'failed',
    });
    // Its retry, under a new reference to the same recipient, is paid.
    expect(triggerFor('ana@example.com', rules, 'JAN-0003-R1')).toBeUndefined();
    expect(triggerFor('ana@example.com', rules, 'jan-0003')).toBeUndefined();
    // A recipient that holds the text is no reference.
    expect(triggerFor('ref=JAN-0003', rules, 'X-1')).toBeUndefined();
  });

  it('refuses a missing MATCH, an unknown status and a bad delay', () => {
    expect(() => parseTriggerRule(':failed')).toThrow(/MATCH must be a non-empty text/);
    expect(() => parseTriggerRule('ref=:failed')).toThrow(/or ref= and a reference_id/);
    expect(() => parseTriggerRule('x')).toThrow(/STATUS "" must be one of success, pending/);
    expect(() => parseTriggerRule('x:bounced')).toThrow(/STATUS "bounced"/);
    expect(() => parseTriggerRule('x:pending:soon')).toThrow(
      /"soon" is neither a status nor a delay/,
    );
    expect(() => parseTriggerRule('x:pending:failed:5:6')).toThrow(/"5" is neither/);
  });

  it('names the variable a list came from', () => {
    expect(parseTriggerList('+a:failed, +b:success:failed:10', 'PAYOUTS_SANDBOX_TRIGGERS')).toEqual(
      [
        { match: '+a', status: 'failed' },
        { match: '+b', status: 'success', later: 'failed', afterMs: 10 },
      ],
    );
    expect(parseTriggerList(' ', 'V')).toEqual([]);
    expect(parseTriggerList(undefined, 'V')).toEqual([]);
    expect(() => parseTriggerList('+a:oops', 'PAYOUTS_SANDBOX_TRIGGERS')).toThrow(
      /^PAYOUTS_SANDBOX_TRIGGERS "\+a:oops": STATUS "oops"/,
    );
  });
});

describe('triggerJson', () => {
  it('prints every key, with the delay in force', () => {
    expect(triggerJson({ match: '+failed', status: 'failed' }, 30000)).toEqual({
      match: '+failed',
      status: 'failed',
      later: null,
      after_ms: null,
    });
    expect(triggerJson({ match: '+pending', status: 'pending', later: 'success' }, 30000)).toEqual({
      match: '+pending',
      status: 'pending',
      later: 'success',
      after_ms: 30000,
    });
    expect(
      triggerJson({ match: 'x', status: 'success', later: 'failed', afterMs: 5 }, 30000).after_ms,
    ).toBe(5);
  });
});
