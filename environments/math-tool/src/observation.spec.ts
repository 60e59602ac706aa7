import { formatRun, NO_OUTPUT } from './observation';
import type { RunResult } from './sandbox/runner';

const limits = { cpuSeconds: 5, wallSeconds: 10, maxOutputChars: 8, maxOutputBytes: 1 << 20 };
const run = (patch: Partial<RunResult> & { text?: string; tail?: string; truncated?: boolean; totalBytes?: number }): RunResult => ({
  status: 'ok',
  exitCode: 0,
  signal: null,
  wallMs: 5,
  ...patch,
  output: { text: patch.text ?? '', tail: patch.tail ?? '', truncated: patch.truncated ?? false, totalBytes: patch.totalBytes ?? (patch.text ?? '').length, overBudget: false },
});

describe('formatRun', () => {
  it('shows the output as is', () => {
    expect(formatRun(run({ text: '45\n' }), limits)).toBe('45\n');
  });

  it('says when there was no output', () => {
    expect(formatRun(run({}), limits)).toBe(NO_OUTPUT);
  });

  it('cuts long output in the middle with a marker giving the sizes', () => {
    expect(formatRun(run({ text: 'abcdef', tail: 'yz', truncated: true, totalBytes: 20 }), limits)).toBe(
      'abcdef\n[... output truncated: the first 6 and the last 2 characters of 20 bytes are shown ...]\nyz',
    );
    // The error at the end of a long traceback stays visible, and the exit marker follows it.
    expect(formatRun(run({ status: 'error', exitCode: 1, text: 'Trace\n', tail: 'Error\n', truncated: true, totalBytes: 900 }), limits)).toBe(
      'Trace\n[... output truncated: the first 6 and the last 2 characters of 900 bytes are shown ...]\nError\n',
    );
    expect(formatRun(run({ status: 'cpu_limit', exitCode: 152, text: 'abcdef', tail: 'yz', truncated: true, totalBytes: 20 }), limits)).toBe(
      'abcdef\n[... output truncated: the first 6 and the last 2 characters of 20 bytes are shown ...]\nyz\n[time limit: the program used more than 5 s of CPU time and was stopped]',
    );
  });

  it('marks a program stopped for printing too much', () => {
    expect(formatRun(run({ status: 'output_limit', exitCode: 137, text: 'yyyyyy', tail: 'y\n', truncated: true, totalBytes: 2 << 20 }), limits)).toBe(
      'yyyyyy\n[... output truncated: the program printed more than 1 MiB and was stopped; the first 6 and the last 2 characters it printed are shown ...]\ny\n',
    );
  });

  it('a tiny budget keeps only the start', () => {
    expect(formatRun(run({ text: 'abc', truncated: true, totalBytes: 20 }), { ...limits, maxOutputChars: 3 })).toBe(
      'abc\n[... output truncated: the first 3 characters of 20 bytes are shown ...]\n',
    );
  });

  it('keeps tracebacks, adds the exit status only when it says something', () => {
    const tb = 'Traceback (most recent call last):\n  File "<string>", line 1, in <module>\nZeroDivisionError: division by zero\n';
    expect(formatRun(run({ status: 'error', exitCode: 1, text: tb }), limits)).toBe(tb);
    expect(formatRun(run({ status: 'error', exitCode: 3 }), limits)).toBe('[exit status 3]');
    expect(formatRun(run({ status: 'error', exitCode: 1 }), limits)).toBe('[exit status 1]');
  });

  it('explains time limits, kills and signals', () => {
    expect(formatRun(run({ status: 'cpu_limit', exitCode: 152, signal: 'SIGXCPU', text: 'start' }), limits)).toBe(
      'start\n[time limit: the program used more than 5 s of CPU time and was stopped]',
    );
    expect(formatRun(run({ status: 'timeout', exitCode: null }), limits)).toBe('[time limit: the program ran for more than 10 s and was stopped]');
    expect(formatRun(run({ status: 'killed', exitCode: 137, signal: 'SIGKILL' }), limits)).toBe('[the program was killed: it went over its CPU time or memory limit]');
    expect(formatRun(run({ status: 'signal', exitCode: 139, signal: 'SIGSEGV' }), limits)).toBe('[the program was killed by SIGSEGV]');
  });

  it('explains code that was not run', () => {
    expect(formatRun(run({ status: 'rejected', exitCode: null, detail: 'the program contains NUL characters' }), limits)).toBe(
      '[the code was not run: the program contains NUL characters]',
    );
    expect(formatRun(run({ status: 'sandbox_error', exitCode: 1, detail: 'bwrap: oops' }), limits)).toBe('[the code could not be run: the sandbox failed to start]');
  });
});
