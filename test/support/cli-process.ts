import { spawn } from 'node:child_process';
import { join } from 'node:path';

/** The real `opentinker` binary (it runs `dist/`, so tests that use it need `npm run build`). */
export const BIN = join(process.cwd(), 'bin', 'opentinker.js');

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the binary to its end; `input` is written to its stdin, which is then closed. */
export function runCli(args: string[], opts: { env: NodeJS.ProcessEnv; cwd: string; input?: string }): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: opts.env, cwd: opts.cwd });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(opts.input ?? '');
  });
}
