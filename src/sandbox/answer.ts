/** The answers the sandbox sends: the interface's success and error envelopes (part 7). */

/** The error envelope of the interface (part 7). */
interface ErrorEnvelope {
  success: false;
  message: [string];
  data: [];
}

/** An answer to send: status, envelope and extra headers. */
export interface Answer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** What a request gets: an answer, or 'cut' to drop the connection without one. */
export type Reply = Answer | 'cut';

/** Builds an error envelope answer. */
export function errorAnswer(
  status: number,
  text: string,
  headers?: Record<string, string>,
): Answer {
  const body: ErrorEnvelope = { success: false, message: [text], data: [] };
  return { status, body, headers };
}

/** Builds a 200 success envelope answer. */
export function okAnswer(text: string, data: unknown): Answer {
  return { status: 200, body: { success: true, message: [text], data } };
}
