import { createInterface } from 'node:readline';

/** True when a person can answer questions (stdin and stderr are terminals). */
export function interactive(): boolean {
  return process.stdin.isTTY === true && process.stderr.isTTY === true;
}

/**
 * Asks a question on the terminal (on stderr, so stdout stays clean for `--json`). Resolves with the
 * answer, or `undefined` when the user presses Ctrl-C or Ctrl-D.
 */
export function ask(question: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
    let answered = false;
    const done = (answer: string | undefined) => {
      if (answered) return;
      answered = true;
      rl.close();
      resolve(answer);
    };
    rl.on('SIGINT', () => {
      process.stderr.write('\n');
      done(undefined);
    });
    rl.on('close', () => done(undefined));
    rl.question(question, (answer) => done(answer));
  });
}

/** Asks for a secret without echoing it. Resolves `undefined` on Ctrl-C or Ctrl-D. */
export function askSecret(question: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const stdin = process.stdin;
    // Echo off before the question shows, or a key typed (or pasted) at once could still be echoed.
    stdin.setRawMode(true);
    process.stderr.write(question);
    stdin.resume();
    stdin.setEncoding('utf8');
    let value = '';
    const finish = (answer: string | undefined) => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off('data', onData);
      process.stderr.write('\n');
      resolve(answer);
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n') return finish(value);
        if (ch === '\u0003' || ch === '\u0004') return finish(undefined);
        if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
        else if (ch >= ' ') value += ch;
      }
    };
    stdin.on('data', onData);
  });
}

/** All of stdin as text (for `--config -` and a key piped into `login`). */
export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString('utf8');
}
