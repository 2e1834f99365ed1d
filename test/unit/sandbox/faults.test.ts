import { describe, expect, it } from 'vitest';
import { UsageError } from '../../../src/errors.js';
import { FaultCounter, parseFaultRule } from '../../../src/sandbox/faults.js';

describe('parseFaultRule', () => {
  it('parses each kind', () => {
    expect(parseFaultRule('create:3:500')).toEqual({ endpoint: 'create', nth: 3, kind: 'http500' });
    expect(parseFaultRule('create:2:429:5')).toEqual({
      endpoint: 'create',
      nth: 2,
      kind: 'http429',
      retryAfterSeconds: 5,
    });
    expect(parseFaultRule('create:4:cut')).toEqual({
      endpoint: 'create',
      nth: 4,
      kind: 'cut-after-apply',
    });
    expect(parseFaultRule('create:4:cut-before')).toEqual({
      endpoint: 'create',
      nth: 4,
      kind: 'cut-before-apply',
    });
    expect(parseFaultRule('any:1:413')).toEqual({ endpoint: 'any', nth: 1, kind: 'http413' });
    expect(parseFaultRule('STATUS:1:http500')).toEqual({
      endpoint: 'status',
      nth: 1,
      kind: 'http500',
    });
  });

  it.each([
    ['create:3', /expected 3 or 4 parts separated by ":", got 2/],
    ['create:1:500:2:3', /got 5/],
    ['payouts:1:500', /endpoint "payouts" must be create, status or any/],
    ['create:0:500', /N "0" must be a whole number from 1/],
    ['create:x:500', /N "x" must be a whole number from 1/],
    ['create:1:503', /kind "503" must be 500, 429, 413, cut \(after apply\) or cut-before/],
    ['create:1:500:5', /only a 429 rule takes a fourth part/],
    ['create:1:429:soon', /Retry-After "soon" must be whole seconds/],
  ])('refuses %s with a precise message', (text, message) => {
    let error: unknown;
    try {
      parseFaultRule(text);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toMatch(message);
    expect((error as Error).message).toContain(`invalid fault rule "${text}"`);
  });
});

describe('FaultCounter', () => {
  it('matches the nth request of an endpoint, and any on the overall count', () => {
    const c = new FaultCounter([
      parseFaultRule('create:2:500'),
      parseFaultRule('any:4:413'),
      parseFaultRule('status:1:429'),
    ]);
    expect(c.next('create')?.kind).toBeUndefined(); // create 1, any 1
    expect(c.next('status')?.kind).toBe('http429'); // status 1, any 2
    expect(c.next('create')?.kind).toBe('http500'); // create 2, any 3
    expect(c.next('status')?.kind).toBe('http413'); // status 2, any 4
    expect(c.next('create')).toBeUndefined();
    expect(c.snapshot()).toEqual({ create: 3, status: 2 });
  });
});
