import type { EnvironmentSpec, RolloutSpec } from './rl-spec';
import type { RunContext } from '../runner/run-context';
import { openEnvironment, type EnvironmentHandle } from './environment-handle';
import { ensureEngineBackend, type Policy } from './policy';

/**
 * Opens a job's environment, then its policy with `openPolicy`, runs `use` with both and closes both
 * whatever happens. The environment comes first: it is cheap, and a bad one should fail before a model
 * is loaded.
 */
export async function withPolicyAndEnvironment<T>(
  spec: { environment: EnvironmentSpec; rollout: Pick<RolloutSpec, 'env_timeout_seconds'> },
  ctx: RunContext,
  openPolicy: () => Promise<Policy>,
  use: (policy: Policy, environment: EnvironmentHandle) => Promise<T>,
): Promise<T> {
  await ensureEngineBackend();
  const handle = await openEnvironment(spec.environment, {
    paths: ctx.paths,
    policy: ctx.policy,
    workDir: ctx.workDir,
    log: (line) => ctx.log(line),
    timeoutMs: spec.rollout.env_timeout_seconds * 1000,
    jobId: ctx.jobId,
  });
  try {
    const policy = await openPolicy();
    try {
      return await use(policy, handle);
    } finally {
      policy.dispose();
    }
  } finally {
    await handle.close();
  }
}
