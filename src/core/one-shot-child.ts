import { fork } from 'node:child_process';
import type { z } from 'zod';
import { parseIpcMessage } from './ipc-message';

/** How a one-shot child process ended: its reply, or why there was none. */
export type OneShotOutcome<R> = { reply: R } | { badReply: string } | { timedOut: true } | { outOfMemory: true } | { stopped: string } | { startFailed: string };

/**
 * Forks `entry` with its heap capped at `memoryMb`, sends it `request` and settles on its first reply,
 * parsed with `replySchema` (a reply that does not fit is `badReply`, naming `sender` and the field);
 * the process is killed once settled. Past `timeoutMs` it is killed and the outcome says so; a process
 * that reached its heap limit (V8 aborts it: "heap out of memory", SIGABRT) is told apart from one that
 * stopped otherwise. Reading hostile input (an upload) happens in such a process, so it can never block
 * or exhaust the API's.
 *
 * @example
 * ```ts
 * const outcome = await askOnce(install.datasetReaderEntry, request, DatasetReaderReply, 'The dataset reader', { memoryMb: 1024, timeoutMs: 600_000 });
 * if ('reply' in outcome) use(outcome.reply);
 * ```
 */
export function askOnce<Q, S extends z.ZodType>(
  entry: string,
  request: Q,
  replySchema: S,
  sender: string,
  o: { memoryMb: number; timeoutMs: number; serialization?: 'json' | 'advanced' },
): Promise<OneShotOutcome<z.output<S>>> {
  return new Promise((resolve) => {
    const child = fork(entry, [], { execArgv: [`--max-old-space-size=${o.memoryMb}`], stdio: ['ignore', 'ignore', 'pipe', 'ipc'], serialization: o.serialization ?? 'json' });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      if (stderr.length < 64 * 1024) stderr += chunk.toString('utf8');
    });
    let settled = false;
    const settle = (outcome: OneShotOutcome<z.output<S>>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(outcome);
      if (child.exitCode === null) child.kill('SIGKILL');
    };
    const timer = setTimeout(() => settle({ timedOut: true }), o.timeoutMs);
    child.once('message', (raw: unknown) => {
      try {
        settle({ reply: parseIpcMessage(replySchema, raw, sender) });
      } catch (error) {
        settle({ badReply: (error as Error).message });
      }
    });
    child.once('error', (error) => settle({ startFailed: error.message }));
    child.once('exit', (code, signal) =>
      settle(/heap out of memory|Reached heap limit/.test(stderr) || signal === 'SIGABRT' ? { outOfMemory: true } : { stopped: signal ?? `code ${code}` }),
    );
    child.send(request as never);
  });
}
