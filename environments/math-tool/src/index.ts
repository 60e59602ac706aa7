/**
 * `@opentinker/env-math-tool`: multi-turn math where the model may run Python in a sandbox.
 *
 * The default export is the environment definition. Named exports let others reuse the sandbox
 * (`PythonSandbox`) and the episode logic.
 */
import mathTool from './environment';

export default mathTool;
export { mathToolConfigSchema, toolConfigShape, sandboxLimits } from './config';
export type { MathToolConfig } from './config';
export { MathToolEpisode } from './episode';
export type { CodeRunner, EpisodeConfig, EndReason } from './episode';
export { parseReply } from './action';
export type { ParsedReply } from './action';
export { formatRun, NO_OUTPUT, NOTHING_TO_DO } from './observation';
export { toolInstructions, firstMessages } from './prompt';
export * from './sandbox';
