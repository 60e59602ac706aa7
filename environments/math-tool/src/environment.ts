/**
 * The math-tool environment: math problems where the model may run Python in a sandbox before it
 * answers.
 */
import { defineEnvironment } from '@opentinker/env-sdk';
import { createMathTasks, validateMathRow } from '@opentinker/env-math';
import type { MathTask } from '@opentinker/env-math';
import { mathToolConfigPolicy, mathToolConfigSchema, sandboxLimits } from './config';
import type { MathToolConfig } from './config';
import { MathToolEpisode } from './episode';
import { PythonSandbox } from './sandbox/sandbox';

/**
 * The environment definition. `create` loads the tasks (the math package's synthetic generator or
 * dataset), then starts the sandbox and runs its self-test: on a host without a working bubblewrap it
 * throws `ENV_SANDBOX_UNAVAILABLE` saying how to fix it, and never runs code unsandboxed.
 */
const mathTool = defineEnvironment<MathToolConfig, MathTask>({
  id: 'math-tool',
  version: '1.0.0',
  description: 'Multi-turn math with a Python tool: ```python blocks run in a bubblewrap sandbox and their output comes back; a \\boxed{} answer ends the episode, graded 1/0',
  turnMode: 'multi',
  taskSource: 'dataset',
  configSchema: mathToolConfigSchema,
  configPolicy: mathToolConfigPolicy,
  create: async (config, ctx) => {
    const tasks = await createMathTasks(config, ctx);
    const sandbox = await PythonSandbox.create({
      python: config.python_path,
      uid: config.sandbox_uid,
      maxConcurrent: config.max_concurrent_runs,
      limits: sandboxLimits(config),
      log: (m) => ctx.log(m),
    });
    return {
      tasks,
      newEpisode: () => new MathToolEpisode(config, sandbox, (m) => ctx.log(m)),
      close: () => sandbox.close(),
    };
  },
  validateRow: validateMathRow,
});

export default mathTool;
