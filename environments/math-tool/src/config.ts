/**
 * The config of the math-tool environment: the math package's task keys plus the tool's keys.
 */
import { z } from '@opentinker/env-sdk';
import type { ConfigPolicy } from '@opentinker/env-sdk';
import { mathConfigPolicy, mathConfigShape } from '@opentinker/env-math';
import { DEFAULT_LIMITS, outputByteBudget } from './sandbox/limits';
import type { SandboxLimits } from './sandbox/limits';

/** The zod shape of the tool's own keys (the task keys come from `mathConfigShape`). */
export const toolConfigShape = {
  max_turns: z.number().int().min(1).max(100).default(5).describe('Replies the model gets; the last must hold the \\boxed{} answer (default 5)'),
  max_output_chars: z
    .number()
    .int()
    .min(16)
    .max(1_000_000)
    .default(DEFAULT_LIMITS.maxOutputChars)
    .describe("Characters of a run's output shown to the model; the rest is cut with a marker (default 4096)"),
  cpu_seconds: z.number().int().min(1).max(600).default(DEFAULT_LIMITS.cpuSeconds).describe('CPU seconds per run (default 5)'),
  wall_seconds: z.number().positive().max(3600).default(DEFAULT_LIMITS.wallSeconds).describe('Wall-clock seconds per run before it is killed (default 10)'),
  memory_mb: z.number().int().min(64).max(1_048_576).default(DEFAULT_LIMITS.memoryMb).describe('Address space per process in MiB (default 512)'),
  max_processes: z.number().int().min(1).max(4096).default(DEFAULT_LIMITS.maxProcesses).describe('Processes/threads a program may have, itself included (default 6)'),
  file_size_mb: z.number().int().min(1).max(65_536).default(DEFAULT_LIMITS.fileSizeMb).describe('Largest file a program may write, MiB (default 16)'),
  scratch_mb: z.number().int().min(1).max(65_536).default(DEFAULT_LIMITS.scratchMb).describe('Size of the writable /tmp of a run, MiB (default 64)'),
  max_concurrent_runs: z.number().int().min(1).max(64).default(2).describe('Sandboxed runs at once per environment instance; more wait (default 2)'),
  python_path: z.string().min(1).default('/usr/bin/python3').describe("Interpreter inside the sandbox; must live under /usr (default Debian's /usr/bin/python3)"),
  sandbox_uid: z.number().int().min(1).max(4_294_967_294).default(65534).describe('Unprivileged uid runs use when the server is root (default 65534, nobody)'),
  system_prompt: z.string().optional().describe('System message before each problem; unset: the built-in tool instructions; empty: none'),
  mixed_numbers: z.boolean().default(false).describe('Grade `2 1/2` as a mixed number (2.5) instead of a product'),
};

/**
 * Who may set what: the dataset files and the sandbox's uid and interpreter are the host's; every
 * resource a run may use is capped by the host's `sandbox_*` ceilings (a tenant asking 1 TiB of memory
 * or 4,096 processes is refused, and a default above a ceiling is lowered to it).
 */
export const mathToolConfigPolicy = {
  ...mathConfigPolicy,
  sandbox_uid: { set: 'host', setting: 'sandbox_uid' },
  python_path: { set: 'host', setting: 'sandbox_python' },
  memory_mb: { limit: 'sandbox_memory_mb' },
  max_processes: { limit: 'sandbox_max_processes' },
  cpu_seconds: { limit: 'sandbox_cpu_seconds' },
  wall_seconds: { limit: 'sandbox_wall_seconds' },
  scratch_mb: { limit: 'sandbox_scratch_mb' },
  file_size_mb: { limit: 'sandbox_file_size_mb' },
  max_concurrent_runs: { limit: 'sandbox_concurrent_runs' },
  max_output_chars: { limit: 'sandbox_output_chars' },
} as const satisfies ConfigPolicy;

/** The full config schema (strict: unknown keys are refused). */
export const mathToolConfigSchema = z.object({ ...mathConfigShape, ...toolConfigShape }).strict();

/** The config after defaults. */
export type MathToolConfig = z.output<typeof mathToolConfigSchema>;

/** The sandbox limits a config asks for. */
export function sandboxLimits(config: MathToolConfig): SandboxLimits {
  return {
    cpuSeconds: config.cpu_seconds,
    wallSeconds: config.wall_seconds,
    memoryMb: config.memory_mb,
    maxProcesses: config.max_processes,
    fileSizeMb: config.file_size_mb,
    scratchMb: config.scratch_mb,
    maxOutputChars: config.max_output_chars,
    maxOutputBytes: outputByteBudget(config.max_output_chars),
  };
}
