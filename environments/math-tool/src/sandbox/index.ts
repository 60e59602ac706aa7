/** The Python sandbox: bubblewrap + prlimit as an unprivileged user, with capped output. */
export { PythonSandbox } from './sandbox';
export type { PythonSandboxOptions } from './sandbox';
export { DEFAULT_LIMITS, outputByteBudget } from './limits';
export type { SandboxLimits } from './limits';
export { sandboxCommand, MAX_CODE_BYTES, SANDBOX_ENV } from './command';
export type { CommandPlan, RootEntry, SandboxTools } from './command';
export { runSandboxed } from './runner';
export type { RunResult, RunStatus } from './runner';
export { OutputCollector } from './output';
export type { CappedOutput } from './output';
export { RunPool } from './pool';
