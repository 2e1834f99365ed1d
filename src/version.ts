import pkg from '../package.json' with { type: 'json' };

/** The CLI's version, from package.json (inlined by the bundler). */
export const version: string = pkg.version;

/** The User-Agent header sent on every request. */
export const userAgent = `payouts-cli/${version}`;
