/**
 * One math-tool episode: the model replies with Python to run or a final answer, for at most
 * `max_turns` replies.
 */
import { EnvironmentError } from '@opentinker/env-sdk';
import type { Episode, Message, StepInfo, StepResult } from '@opentinker/env-sdk';
import { gradeAnswer, groundTruthAnswer } from '@opentinker/env-math';
import type { MathTask } from '@opentinker/env-math';
import { ANSWER_FORMATS, parseReply } from './action';
import { formatRun, lastTurnNote, NOTHING_TO_DO } from './observation';
import { firstMessages } from './prompt';
import type { SandboxLimits } from './sandbox/limits';
import type { RunResult } from './sandbox/runner';

/** What an episode needs to run code (the {@link PythonSandbox}, or a fake in tests). */
export interface CodeRunner {
  readonly limits: SandboxLimits;
  run(code: string, signal?: AbortSignal): Promise<RunResult>;
}

/** The config keys an episode reads. */
export interface EpisodeConfig {
  max_turns: number;
  system_prompt?: string;
  mixed_numbers: boolean;
}

/** Why an episode ended, in `info.reason` of the last step. */
export type EndReason = 'answer' | 'turn_limit';

/**
 * The episode. Each `step` is one reply of the model:
 *
 * 1. A reply with a `\boxed{}` answer (outside code, quotes and thoughts) ends the episode: reward 1
 *    if the math grader credits it, else 0. The grader reads the whole reply with its strict rules:
 *    every box must state the same answer, and nothing around the last one may hedge or take it back
 *    (`info.verdict` says which rule failed). **The answer wins over code**: Python in the same reply
 *    is not run (`info.code_ignored: true`), since the model has committed to its answer and would
 *    never read the output.
 * 2. Otherwise, the `max_turns`-th reply ends the episode with reward 0 (`info.reason: 'turn_limit'`);
 *    code in it is not run either.
 * 3. Otherwise, a reply with ```` ```python ```` blocks runs them (joined, in one fresh sandbox run)
 *    and the observation is the output, as a `tool` message, reward 0.
 * 4. Otherwise (neither), a `user` message explains what is expected, reward 0.
 *
 * Every step's `info` has `turn`, `action` (`answer` | `code` | `none`) and `code_runs` (programs run
 * so far: an episode cut short by the trainer still says whether it used the tool); code steps add
 * `run_status`, `exit_code`, `truncated`; the last step adds `reason`, `correct`, `extracted`,
 * `ground_truth`, `data_source` and `turns`; an answer step also `verdict` (the grader's `correct`,
 * `wrong`, `several_answers`, `hedged` or `retracted`).
 */
export class MathToolEpisode implements Episode<MathTask> {
  private state: 'new' | 'open' | 'done' | 'closed' = 'new';
  private task: MathTask | null = null;
  private truth = '';
  private turn = 0;
  private codeRuns = 0;
  private stop = new AbortController();
  /** Bumped by every reset and close, so a step whose code outlived its episode is recognised. */
  private generation = 0;

  constructor(
    private readonly config: EpisodeConfig,
    private readonly runner: CodeRunner,
    private readonly log: (message: string) => void = () => undefined,
  ) {}

  reset(task: MathTask, _seed: number): Message[] {
    if (this.state === 'closed') throw new EnvironmentError('ENV_EPISODE_CLOSED', 'The episode is closed');
    const truth = task && typeof task === 'object' ? groundTruthAnswer(task.ground_truth) : null;
    if (!task || !Array.isArray(task.prompt) || task.prompt.length === 0 || truth === null) {
      throw new EnvironmentError('ENV_INVALID_TASK', 'A math-tool task needs a prompt (messages) and a ground_truth', 'task');
    }
    this.stop.abort(); // a run still going from a previous use of this episode
    this.stop = new AbortController();
    this.generation += 1;
    this.task = task;
    this.truth = truth;
    this.turn = 0;
    this.codeRuns = 0;
    this.state = 'open';
    return firstMessages(task, this.config.max_turns, this.config.system_prompt);
  }

  async step(action: string): Promise<StepResult> {
    if (this.state === 'new') throw new EnvironmentError('ENV_NOT_RESET', 'Call reset before step');
    if (this.state === 'closed') throw new EnvironmentError('ENV_EPISODE_CLOSED', 'The episode is closed');
    if (this.state === 'done') throw new EnvironmentError('ENV_STEP_AFTER_DONE', 'The episode is over');
    this.turn += 1;
    const turn = this.turn;
    const reply = parseReply(action);

    if (reply.answer !== null) {
      this.state = 'done';
      const task = this.task!;
      // The whole reply is graded, not the box alone: a second box, a hedge or a retraction beside it counts.
      const { correct, verdict } = gradeAnswer(action, this.truth, task.data_source, { formats: ANSWER_FORMATS, mixedNumbers: this.config.mixed_numbers });
      return this.end(correct ? 1 : 0, { turn, action: 'answer', code_ignored: reply.code !== null, reason: 'answer', correct, extracted: reply.answer, verdict });
    }
    if (turn >= this.config.max_turns) {
      this.state = 'done';
      return this.end(0, {
        turn,
        action: reply.code !== null ? 'code' : 'none',
        code_ignored: reply.code !== null,
        reason: 'turn_limit',
        correct: false,
        extracted: null,
      });
    }
    const left = this.config.max_turns - turn;
    const withNote = (text: string) => (left === 1 ? `${text.replace(/\n$/, '')}\n\n${lastTurnNote()}` : text);
    if (reply.code === null) {
      return {
        observation: withNote(NOTHING_TO_DO),
        observationRole: 'user',
        reward: 0,
        done: false,
        info: { turn, action: 'none', turns_left: left, code_runs: this.codeRuns },
      };
    }

    const generation = this.generation;
    const result = await this.runner.run(reply.code, this.stop.signal);
    if (generation !== this.generation) {
      throw new EnvironmentError('ENV_EPISODE_CLOSED', 'The episode was closed or reset while its code ran');
    }
    if (result.status === 'sandbox_error') this.log(`math-tool: sandbox error: ${result.detail ?? 'unknown'}`);
    if (result.status !== 'rejected') this.codeRuns += 1;
    return {
      observation: withNote(formatRun(result, this.runner.limits)),
      observationRole: 'tool',
      reward: 0,
      done: false,
      info: {
        turn,
        action: 'code',
        blocks: reply.blocks,
        run_status: result.status,
        exit_code: result.exitCode,
        truncated: result.output.truncated,
        turns_left: left,
        code_runs: this.codeRuns,
      },
    };
  }

  close(): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.generation += 1;
    this.stop.abort();
    this.task = null;
  }

  private end(reward: number, info: StepInfo): StepResult {
    const task = this.task!;
    return {
      observation: '',
      reward,
      done: true,
      info: { ...info, ground_truth: this.truth, data_source: task.data_source, turns: this.turn, code_runs: this.codeRuns },
    };
  }
}
