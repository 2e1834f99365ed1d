import { InvalidArgumentError } from 'commander';

/** Parses a whole number option within bounds, for commander. */
export function intOption(name: string, min: number, max: number): (value: string) => number {
  return (value: string) => {
    if (!/^\d+$/.test(value.trim()))
      throw new InvalidArgumentError(`${name} must be a whole number`);
    const n = Number.parseInt(value, 10);
    if (n < min || n > max)
      throw new InvalidArgumentError(`${name} must be between ${min} and ${max}`);
    return n;
  };
}
