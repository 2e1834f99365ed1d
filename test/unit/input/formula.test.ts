import { describe, expect, it } from 'vitest';
import { guardFormula, unguardFormula } from '../../../src/input/formula.js';

describe('the formula guard of the files payouts writes for spreadsheets', () => {
  it('quotes what a spreadsheet would run, and a leading quote itself', () => {
    expect(guardFormula('=SUM(A1)')).toBe("'=SUM(A1)");
    expect(guardFormula('+4915112345678')).toBe("'+4915112345678");
    expect(guardFormula('-5% off')).toBe("'-5% off");
    expect(guardFormula('@home')).toBe("'@home");
    expect(guardFormula('\tx')).toBe("'\tx");
    expect(guardFormula("'Tis")).toBe("''Tis");
    expect(guardFormula('plain')).toBe('plain');
    expect(guardFormula('')).toBe('');
  });

  it('reads every value back exactly as it was before the guard', () => {
    const values = ['=SUM(A1)', '+49', '-5', '@x', '\t', '\r', "'", "''", "'=x", "'Tis", 'a', ''];
    for (const v of values) expect(unguardFormula(guardFormula(v)), JSON.stringify(v)).toBe(v);
    // A cell the writer left alone is read as it is.
    expect(unguardFormula("'quoted")).toBe("'quoted");
    expect(unguardFormula('plain')).toBe('plain');
  });
});
