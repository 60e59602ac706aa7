/**
 * What the model reads back: a run's output with clear markers for cuts and limits, and the
 * messages for replies the environment cannot act on.
 */
import type { SandboxLimits } from './sandbox/limits';
import type { RunResult } from './sandbox/runner';
import { splitBudget } from './sandbox/output';

/** Shown when a run printed nothing and ended normally. */
export const NO_OUTPUT = '(no output)';

/** The reply to a reply with neither a Python block nor a `\boxed{}` answer. */
export const NOTHING_TO_DO =
  'Your reply has no ```python code block to run and no final answer. ' + 'Write Python in a ```python block to run it, or give your final answer as \\boxed{...}.';

/**
 * The observation for a run: its output (stdout and stderr merged), then one marker line per thing
 * that cut it short, in square brackets so it cannot be mistaken for the program's output, e.g.
 * `[... output truncated: the first 3072 and the last 1024 characters of 10000 bytes are shown ...]`
 * between the start and the end of a long output, or
 * `[time limit: the program used more than 5 s of CPU time and was stopped]`.
 */
export function formatRun(result: RunResult, limits: Pick<SandboxLimits, 'cpuSeconds' | 'wallSeconds' | 'maxOutputChars' | 'maxOutputBytes'>): string {
  const markers: string[] = [];
  const { output } = result;
  switch (result.status) {
    case 'ok':
    case 'output_limit':
      break;
    case 'error':
      if (result.exitCode !== 1 || (output.text.trim() === '' && output.tail.trim() === '')) markers.push(`[exit status ${result.exitCode}]`);
      break;
    case 'cpu_limit':
      markers.push(`[time limit: the program used more than ${limits.cpuSeconds} s of CPU time and was stopped]`);
      break;
    case 'timeout':
      markers.push(`[time limit: the program ran for more than ${limits.wallSeconds} s and was stopped]`);
      break;
    case 'killed':
      markers.push('[the program was killed: it went over its CPU time or memory limit]');
      break;
    case 'signal':
      markers.push(`[the program was killed by ${result.signal ?? 'a signal'}]`);
      break;
    case 'aborted':
      markers.push('[the program was stopped: the episode was closed]');
      break;
    case 'rejected':
      markers.push(`[the code was not run: ${result.detail ?? 'it cannot be run'}]`);
      break;
    case 'sandbox_error':
      markers.push('[the code could not be run: the sandbox failed to start]');
      break;
  }
  let text = output.text;
  if (output.truncated) {
    const { headChars, tailChars } = splitBudget(limits.maxOutputChars);
    const shown = tailChars > 0 ? `the first ${headChars} and the last ${tailChars} characters` : `the first ${headChars} characters`;
    const cut =
      result.status === 'output_limit'
        ? `[... output truncated: the program printed more than ${formatBytes(limits.maxOutputBytes)} and was stopped; ${shown} it printed are shown ...]`
        : `[... output truncated: ${shown} of ${output.totalBytes} bytes are shown ...]`;
    text = `${lineEnd(text)}${cut}\n${output.tail}`;
  }
  if (text === '' && markers.length === 0) return NO_OUTPUT;
  if (text === '') return markers.join('\n');
  return markers.length === 0 ? text : `${lineEnd(text)}${markers.join('\n')}`;
}

/** `text` ending with a newline (unless empty). */
function lineEnd(text: string): string {
  return text === '' || text.endsWith('\n') ? text : `${text}\n`;
}

/** A reminder appended when one reply is left. */
export function lastTurnNote(): string {
  return '[one reply left: it must give the final answer as \\boxed{...}]';
}

function formatBytes(bytes: number): string {
  const mib = bytes / (1024 * 1024);
  return Number.isInteger(mib) ? `${mib} MiB` : `${bytes} bytes`;
}
