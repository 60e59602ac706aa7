/**
 * The math environment: one turn, the policy answers a problem, the reward is 1 for a correct final
 * answer and 0 otherwise (or `format_penalty` when no answer can be found); with `grader: 'verl'`, the
 * score verl's own scorer for the task's data source returns.
 */
import { defineEnvironment, EnvironmentError, z } from '@opentinker/env-sdk';
import type { Episode, Message } from '@opentinker/env-sdk';
import { groundTruthAnswer } from './grader/grade';
import { checkGraderConfig, checkTaskForGrader, scoreResponse } from './scoring';
import { createMathTasks, mathConfigPolicy, mathConfigShape } from './tasks';
import type { MathTask } from './tasks';
import { validateMathRow } from './tasks/rows';

/** The full config schema of the math environment. */
export const mathEnvironmentConfigSchema = z
  .object({
    ...mathConfigShape,
    system_prompt: z.string().default('').describe('Optional system message sent before each problem (empty: none)'),
    format_penalty: z.number().finite().default(0).describe('Reward when no final answer can be extracted (e.g. -0.1); default 0'),
    mixed_numbers: z.boolean().default(false).describe('Grade `2 1/2` and `2\\frac12` as mixed numbers (2.5) instead of products'),
    grader: z
      .enum(['strict', 'verl'])
      .default('strict')
      .describe("'strict' (default: hedged, negated or several different answers are wrong) or 'verl' (verl's scorer for the data source, its exact score)"),
    verl_gsm8k_method: z.enum(['strict', 'flexible']).default('strict').describe("grader 'verl', openai/gsm8k: verl's extraction method"),
    verl_strict_box_verify: z.boolean().default(false).describe("grader 'verl', math_dapo sources: compare the last \\boxed{} exactly (strict_box_verify)"),
  })
  .strict();

export type MathEnvironmentConfig = z.output<typeof mathEnvironmentConfigSchema>;

const math = defineEnvironment<MathEnvironmentConfig, MathTask>({
  id: 'math',
  version: '1.0.0',
  description: 'Single-turn math problems graded 1/0 on the final answer (\\boxed{}, #### or Answer:); synthetic arithmetic or your dataset',
  turnMode: 'single',
  taskSource: 'dataset',
  configSchema: mathEnvironmentConfigSchema,
  configPolicy: mathConfigPolicy,
  create: async (config, ctx) => {
    const tasks = await createMathTasks(config, ctx);
    await checkGraderConfig(config, tasks);
    return {
      tasks,
      newEpisode: () => new MathEpisode(config),
      close: () => undefined,
    };
  },
  validateRow: validateMathRow,
});

export default math;

/** One single-turn episode. */
export class MathEpisode implements Episode<MathTask> {
  private task: MathTask | null = null;
  private truth = '';
  private state: 'new' | 'open' | 'done' | 'closed' = 'new';

  constructor(
    private readonly config: Pick<MathEnvironmentConfig, 'system_prompt' | 'format_penalty' | 'mixed_numbers' | 'grader' | 'verl_gsm8k_method' | 'verl_strict_box_verify'>,
  ) {}

  /**
   * Starts the task: its prompt (messages, or a text as one user message), after the optional system
   * prompt. A task without a prompt is OpenTinker's env kwargs (`ground_truth`, `data_source`,
   * `extra_info`: what its clients send a game server's `/reset`, keeping the prompt on their side); it
   * starts, as OpenTinker's `MathGame`, from "Please solve the following problem:", followed by
   * `extra_info.question` when the row has one.
   */
  reset(task: MathTask, _seed: number): Message[] {
    if (this.state === 'closed') throw new EnvironmentError('ENV_EPISODE_CLOSED', 'The episode is closed');
    const truth = task && typeof task === 'object' ? groundTruthAnswer(task.ground_truth) : null;
    const prompt = task && typeof task === 'object' ? taskPrompt(task) : null;
    if (!task || prompt === null || truth === null) {
      throw new EnvironmentError('ENV_INVALID_TASK', 'A math task needs a ground_truth, and a prompt (messages or a text) when it has one', 'task');
    }
    checkTaskForGrader(this.config, task);
    this.task = task;
    this.truth = truth;
    this.state = 'open';
    const messages: Message[] = prompt;
    if (this.config.system_prompt && messages[0]?.role !== 'system') messages.unshift({ role: 'system', content: this.config.system_prompt });
    return messages;
  }

  step(action: string) {
    if (this.state === 'new') throw new EnvironmentError('ENV_NOT_RESET', 'Call reset before step');
    if (this.state === 'closed') throw new EnvironmentError('ENV_EPISODE_CLOSED', 'The episode is closed');
    if (this.state === 'done') throw new EnvironmentError('ENV_STEP_AFTER_DONE', 'The episode is over: math is single-turn');
    this.state = 'done';
    const task = this.task!;
    const { reward, info } = scoreResponse(this.config, action, this.truth, task);
    return {
      observation: '',
      reward,
      done: true,
      info: { ...info, ground_truth: this.truth, data_source: task.data_source },
    };
  }

  close(): void {
    this.state = 'closed';
    this.task = null;
  }
}

/** OpenTinker's `MathGame.get_initial_user_message()`: its first message when the prompt is the client's. */
export const OPENTINKER_MATH_OPENING = 'Please solve the following problem:';

/** A task's prompt as fresh messages; a task without one gets OpenTinker's opening; null when malformed. */
function taskPrompt(task: MathTask): Message[] | null {
  const raw: unknown = task.prompt;
  if (typeof raw === 'string') return raw.trim() === '' ? null : [{ role: 'user', content: raw }];
  if (Array.isArray(raw)) {
    const ok = raw.length > 0 && raw.every((m) => m !== null && typeof m === 'object' && typeof m.content === 'string' && typeof m.role === 'string');
    return ok ? raw.map((m: { role: Message['role']; content: string }) => ({ role: m.role, content: m.content })) : null;
  }
  if (raw !== undefined && raw !== null) return null;
  const question = (task.extra_info as { question?: unknown } | undefined)?.question;
  const content = typeof question === 'string' && question.trim() !== '' ? `${OPENTINKER_MATH_OPENING}\n\n${question}` : OPENTINKER_MATH_OPENING;
  return [{ role: 'user', content }];
}
