import { describe, expect, it } from 'vitest';
import { locationText } from '../../../src/input/fields.js';

describe('locationText', () => {
  it('writes a line number as problems show it, and keeps a text as it is', () => {
    expect(locationText(12)).toBe('line 12');
    expect(locationText('item 3')).toBe('item 3');
  });
});
