import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The official Tinker SDK releases the Tinker wire is checked against (test/tinker/sdk-versions, newest
 * first), their recorded captures, and a way to run Python with one of them from .venv-tinker
 * (test/tinker/setup-sdk.sh).
 */

const ROOT = process.cwd();
export const TINKER_DIR = join(ROOT, 'test', 'tinker');
export const TINKER_FIXTURES = join(ROOT, 'test', 'fixtures', 'tinker');
const VENV = join(ROOT, '.venv-tinker');

export const SDK_VERSIONS: string[] = readFileSync(join(TINKER_DIR, 'sdk-versions'), 'utf8')
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l !== '' && !l.startsWith('#'));

/** Whether release `version` is `minimum` or later (numeric, part by part). */
export function versionAtLeast(version: string, minimum: string): boolean {
  const a = version.split('.').map(Number);
  const b = minimum.split('.').map(Number);
  for (let i = 0; i < Math.max(a.length, b.length); i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) > (b[i] ?? 0);
  return true;
}

/** One exchange of a capture (test/tinker/fake_tinker_server.py writes them). */
export interface CapturedExchange {
  step: string;
  method: string;
  path: string;
  query?: Record<string, string>;
  headers: Record<string, string>;
  other_headers: string[];
  body?: unknown;
  body_base64?: string;
  body_proto?: Record<string, unknown>;
  status: number;
  response?: unknown;
  response_base64?: string;
  response_content_type?: string;
}

export interface Capture {
  sdk_version: string;
  client_config: Record<string, unknown>;
  skipped: string[];
  observed: Record<string, unknown>;
  exchanges: CapturedExchange[];
}

export function loadCapture(version: string): Capture {
  return JSON.parse(readFileSync(join(TINKER_FIXTURES, `sdk-${version}.json`), 'utf8')) as Capture;
}

export const SCENARIO = JSON.parse(readFileSync(join(TINKER_FIXTURES, 'scenario.json'), 'utf8'));

/** Why Python with this SDK release cannot run here, or undefined when it can (setup-sdk.sh lists what it installed in .venv-tinker/ready). */
export function sdkMissing(version: string): string | undefined {
  const ready = join(VENV, 'ready');
  if (!existsSync(ready)) return 'no .venv-tinker (run sh test/tinker/setup-sdk.sh)';
  if (!readFileSync(ready, 'utf8').split('\n').includes(version)) return `tinker ${version} is not in .venv-tinker (run sh test/tinker/setup-sdk.sh)`;
  return undefined;
}

/** Runs a script under test/tinker with one SDK release; resolves with its stdout. */
export function runWithSdk(version: string, script: string, args: string[], timeoutMs = 120_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('sh', [join(TINKER_DIR, 'python.sh'), version, join(TINKER_DIR, script), ...args], { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(Object.assign(new Error(`${script} with tinker ${version} failed: ${err.message}\n${stderr.slice(-4000)}`), { stdout }));
      else resolve(stdout);
    });
  });
}
