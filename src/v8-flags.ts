/**
 * The V8 flags of the commands that read or send payouts, never changed back once set.
 * `openService` sets them before the HTTP client loads, and a send (not a dry run) at its
 * start, before it reads any row (every module a send's pass 1 needs is loaded by then).
 * Not at start-up: a flag change makes V8 reject the code caches of the files (and of Node's
 * own modules) loaded after it, unless they were made under the same flags
 * (scripts/code-cache.mjs makes each file's cache under the flags set when it was loaded),
 * and set before `status` loads its command's modules, they cost it 8M more instructions.
 *
 * --liftoff-only: undici parses HTTP with WebAssembly. V8's optimising tier compiles it in the
 * background and holds up process exit by tens of ms; the baseline tier is plenty.
 *
 * --semi-space-growth-factor=16: a send turns over megabytes of short-lived rows, answers,
 * journal lines and result texts. V8's young generation starts at 1 MiB and doubles only now
 * and then, so a 100k-row send made 160 scavenges (66–111 ms of pauses); letting it grow to
 * its full 16 MiB at its first growth made 45 (43–59 ms). Peak RSS of a 100k or 1M send did
 * not change; a 10k send's rose from 78 to 94 MiB (its young generation had not grown yet).
 * It must be set before the rows are read: set when the send connected, it found the young
 * generation grown too little to matter (149 scavenges).
 */
export const PAYOUT_V8_FLAGS = '--liftoff-only --semi-space-growth-factor=16';
