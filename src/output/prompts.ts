/**
 * The questions put to a person at the terminal, apart from what the output writes: a line
 * read, or one typed unseen, where Ctrl-C or the end of input is a refusal.
 */
import { InterruptedError } from '../errors.js';
import type { InStream, OutStream } from './streams.js';

/** Whether the answer to a yes/no question is yes; the default is No. */
export function saysYes(answer: string): boolean {
  return /^y(es)?$/i.test(answer.trim());
}

/** Asks `question` on `stderr` and reads a line of `stdin`, echoed. */
export async function askLine(
  stdin: InStream,
  stderr: OutStream,
  question: string,
): Promise<string> {
  const { createInterface } = await import('node:readline');
  const rl = createInterface({ input: stdin, output: stderr, terminal: true });
  try {
    return await new Promise<string>((resolve, reject) => {
      // Ctrl-C at a prompt (readline sees it as a key in raw mode) or the end of input
      // is a refusal: nothing was confirmed, so nothing is sent.
      const onClose = () => {
        stderr.write('\n');
        reject(new InterruptedError('interrupted at the prompt: nothing was done'));
      };
      rl.once('close', onClose);
      rl.once('SIGINT', () => rl.close());
      rl.question(question, (a) => {
        // Only our listener: readline's own 'close' handler detaches it from stdin, and
        // without it this interface would go on echoing what is typed at the next prompt.
        rl.off('close', onClose);
        resolve(a);
      });
    });
  } finally {
    rl.close();
  }
}

/**
 * Asks without echoing what is typed, through @inquirer/password. As at the other prompts,
 * Ctrl-C or the end of input (Ctrl-D) before an answer is a refusal.
 */
export async function askHidden(
  stdin: InStream,
  stderr: OutStream,
  question: string,
): Promise<string> {
  const [{ default: password }, { Writable }] = await Promise.all([
    import('@inquirer/password'),
    import('node:stream'),
  ]);
  // The prompt ends the stream it writes to when done; stderr must stay open for what follows.
  const screen = Object.assign(
    new Writable({ write: (chunk, _encoding, done) => stderr.write(chunk, done) }),
    { isTTY: stderr.isTTY, columns: stderr.columns },
  );
  // Its readline pauses stdin when it closes (Ctrl-D, end of input), which the prompt ignores.
  const closed = new AbortController();
  const onPause = () => closed.abort();
  const answer = password(
    {
      // Shown like the other prompts: the question alone, without glyph, colour or hint.
      message: '',
      theme: { prefix: question.trimEnd(), style: { help: () => '' } },
    },
    { input: stdin, output: screen, signal: closed.signal },
  );
  stdin.once('pause', onPause);
  try {
    return await answer;
  } catch (err) {
    const refused = err instanceof Error && /^(Exit|Abort)PromptError$/.test(err.name);
    if (refused) throw new InterruptedError('interrupted at the prompt: nothing was done');
    throw err;
  } finally {
    stdin.off('pause', onPause);
  }
}
