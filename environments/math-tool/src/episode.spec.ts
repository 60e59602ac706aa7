import type { MathTask } from '@opentinker/env-math';
import { MathToolEpisode } from './episode';
import type { CodeRunner } from './episode';
import { DEFAULT_LIMITS } from './sandbox/limits';
import type { RunResult } from './sandbox/runner';
import { toolInstructions } from './prompt';

/** A runner that records programs and answers from a table (the real sandbox is tested elsewhere). */
function fakeRunner(outputs: Record<string, Partial<RunResult> & { text?: string }> = {}): CodeRunner & { programs: string[] } {
  const programs: string[] = [];
  return {
    programs,
    limits: DEFAULT_LIMITS,
    run: async (code) => {
      programs.push(code);
      const o = outputs[code] ?? { text: `ran ${code}\n` };
      return {
        status: 'ok',
        exitCode: 0,
        signal: null,
        wallMs: 1,
        ...o,
        output: { text: o.text ?? '', tail: '', truncated: false, totalBytes: (o.text ?? '').length, overBudget: false },
      };
    },
  };
}

const task: MathTask = {
  split: 'test',
  index: 0,
  prompt: [{ role: 'user', content: 'What is 6 times 7? Put the answer in \\boxed{}.' }],
  question: 'What is 6 times 7?',
  ground_truth: '42',
  data_source: 'opentinker/synthetic-arithmetic',
  extra_info: {},
  metadata: {},
};

const config = { max_turns: 3, mixed_numbers: false };
const code = (c: string) => `Let me check.\n\`\`\`python\n${c}\n\`\`\``;

describe('MathToolEpisode', () => {
  it('starts with the tool instructions then the task prompt', () => {
    const ep = new MathToolEpisode(config, fakeRunner());
    expect(ep.reset(task, 1)).toEqual([
      { role: 'system', content: toolInstructions(3) },
      { role: 'user', content: 'What is 6 times 7? Put the answer in \\boxed{}.' },
    ]);
    expect(toolInstructions(3)).toContain('you have 3 turns');
  });

  it('uses a custom system prompt, none when empty, and merges with a task system message', () => {
    expect(new MathToolEpisode({ ...config, system_prompt: 'Be brief.' }, fakeRunner()).reset(task, 1)[0]).toEqual({ role: 'system', content: 'Be brief.' });
    expect(new MathToolEpisode({ ...config, system_prompt: '' }, fakeRunner()).reset(task, 1)).toEqual(task.prompt);
    const withSystem = { ...task, prompt: [{ role: 'system' as const, content: 'Dataset rules.' }, ...task.prompt] };
    expect(new MathToolEpisode({ ...config, system_prompt: 'Tools.' }, fakeRunner()).reset(withSystem, 1)[0]).toEqual({ role: 'system', content: 'Tools.\n\nDataset rules.' });
  });

  it('runs code, returns the output as a tool observation, then grades a correct boxed answer 1', async () => {
    const runner = fakeRunner({ 'print(6*7)': { text: '42\n' } });
    const ep = new MathToolEpisode(config, runner);
    ep.reset(task, 1);
    const first = await ep.step(code('print(6*7)'));
    expect(first).toEqual({
      observation: '42\n',
      observationRole: 'tool',
      reward: 0,
      done: false,
      info: { turn: 1, action: 'code', blocks: 1, run_status: 'ok', exit_code: 0, truncated: false, turns_left: 2, code_runs: 1 },
    });
    const last = await ep.step('The product is \\boxed{42}.');
    expect(last).toEqual({
      observation: '',
      reward: 1,
      done: true,
      info: {
        turn: 2,
        action: 'answer',
        code_ignored: false,
        reason: 'answer',
        correct: true,
        extracted: '42',
        verdict: 'correct',
        ground_truth: '42',
        data_source: 'opentinker/synthetic-arithmetic',
        turns: 2,
        code_runs: 1,
      },
    });
    expect(runner.programs).toEqual(['print(6*7)']);
  });

  it('grades the whole reply with the strict rules: a second box, a hedge or a retraction is not an answer of 42', async () => {
    const grade = async (reply: string) => {
      const ep = new MathToolEpisode(config, fakeRunner());
      ep.reset(task, 1);
      return ep.step(reply);
    };
    expect(await grade('\\boxed{41} or rather \\boxed{42}')).toMatchObject({ reward: 0, done: true, info: { correct: false, extracted: '42', verdict: 'several_answers' } });
    expect(await grade('It is either \\boxed{42} or 41.')).toMatchObject({ reward: 0, done: true, info: { verdict: 'hedged' } });
    expect(await grade('\\boxed{42}\n\nThat is wrong.')).toMatchObject({ reward: 0, done: true, info: { verdict: 'retracted' } });
    // A box in code, a quote or a thought is not the answer, and does not count against it.
    expect(await grade('<think>\\boxed{41}?</think>\nSo \\boxed{42}.')).toMatchObject({ reward: 1, info: { verdict: 'correct' } });
    expect(await grade('Write `\\boxed{41}` like this: \\boxed{42}')).toMatchObject({ reward: 1, info: { verdict: 'correct' } });
    // Only the \\boxed{} format is an answer here: `#### 41` and `Answer: 41` neither answer nor disagree.
    expect(await grade('#### 41\nAnswer: 41\n\\boxed{42}')).toMatchObject({ reward: 1, info: { verdict: 'correct' } });
    expect(await grade('Answer: 42')).toMatchObject({ reward: 0, done: false, info: { action: 'none' } });
  });

  it('grades with the math grader: equivalent forms count, wrong answers get 0', async () => {
    const a = new MathToolEpisode(config, fakeRunner());
    a.reset({ ...task, ground_truth: '0.5' }, 1);
    expect((await a.step('\\boxed{\\frac{1}{2}}')).reward).toBe(1);
    const b = new MathToolEpisode(config, fakeRunner());
    b.reset(task, 1);
    const wrong = await b.step('\\boxed{41}');
    expect(wrong).toMatchObject({ reward: 0, done: true, info: { correct: false, extracted: '41', reason: 'answer' } });
  });

  it('the answer wins over code in the same reply: the code is not run', async () => {
    const runner = fakeRunner();
    const ep = new MathToolEpisode(config, runner);
    ep.reset(task, 1);
    const r = await ep.step(`${code('print(6*7)')}\nSo \\boxed{42}`);
    expect(r).toMatchObject({ reward: 1, done: true, info: { action: 'answer', code_ignored: true, code_runs: 0 } });
    expect(runner.programs).toEqual([]);
  });

  it('a boxed string printed by code is not an answer', async () => {
    const runner = fakeRunner();
    const ep = new MathToolEpisode(config, runner);
    ep.reset(task, 1);
    const r = await ep.step(code('print(r"\\boxed{42}")'));
    expect(r.done).toBe(false);
    expect(runner.programs).toEqual(['print(r"\\boxed{42}")']);
  });

  it('answers a reply with neither code nor answer with a user message, and warns before the last turn', async () => {
    const ep = new MathToolEpisode(config, fakeRunner());
    ep.reset(task, 1);
    const first = await ep.step('Hmm.');
    expect(first).toMatchObject({ observationRole: 'user', reward: 0, done: false, info: { turn: 1, action: 'none', turns_left: 2, code_runs: 0 } });
    expect(first.observation).toContain('no ```python code block');
    expect(first.observation).not.toContain('one reply left');
    const second = await ep.step(code('print(1)'));
    expect(second.observation).toBe('ran print(1)\n\n[one reply left: it must give the final answer as \\boxed{...}]');
    expect(second.info).toMatchObject({ turns_left: 1, code_runs: 1 });
  });

  it('ends at the turn limit with reward 0 and says why; code in the last reply is not run', async () => {
    const runner = fakeRunner();
    const ep = new MathToolEpisode(config, runner);
    ep.reset(task, 1);
    await ep.step(code('a = 1'));
    await ep.step('thinking');
    const last = await ep.step(code('print(42)'));
    expect(last).toEqual({
      observation: '',
      reward: 0,
      done: true,
      info: {
        turn: 3,
        action: 'code',
        code_ignored: true,
        reason: 'turn_limit',
        correct: false,
        extracted: null,
        ground_truth: '42',
        data_source: 'opentinker/synthetic-arithmetic',
        turns: 3,
        code_runs: 1,
      },
    });
    expect(runner.programs).toEqual(['a = 1']);
    await expect(ep.step('\\boxed{42}')).rejects.toMatchObject({ code: 'ENV_STEP_AFTER_DONE' });
  });

  it('max_turns 1: the only reply must answer', async () => {
    const ep = new MathToolEpisode({ ...config, max_turns: 1 }, fakeRunner());
    expect(ep.reset(task, 1)[0].content).toContain('you have 1 turn.');
    expect(await ep.step(code('print(42)'))).toMatchObject({ reward: 0, done: true, info: { reason: 'turn_limit' } });
  });

  it('refuses step before reset, after close, and tasks without a ground truth', async () => {
    const ep = new MathToolEpisode(config, fakeRunner());
    await expect(ep.step('x')).rejects.toMatchObject({ code: 'ENV_NOT_RESET' });
    expect(() => ep.reset({ ...task, ground_truth: '' }, 1)).toThrow(expect.objectContaining({ code: 'ENV_INVALID_TASK' }));
    expect(() => ep.reset({ ...task, prompt: [] }, 1)).toThrow(expect.objectContaining({ code: 'ENV_INVALID_TASK' }));
    ep.reset(task, 1);
    ep.close();
    ep.close();
    await expect(ep.step('x')).rejects.toMatchObject({ code: 'ENV_EPISODE_CLOSED' });
  });

  it('reset starts over: turns and runs are counted per episode', async () => {
    const ep = new MathToolEpisode(config, fakeRunner());
    ep.reset(task, 1);
    await ep.step(code('print(1)'));
    ep.reset(task, 2);
    expect(await ep.step('\\boxed{42}')).toMatchObject({ info: { turn: 1, turns: 1, code_runs: 0 } });
  });

  it('a step whose code outlives a reset or close is refused, not mixed into the new episode', async () => {
    let finish: (r: RunResult) => void = () => undefined;
    const slow: CodeRunner = { limits: DEFAULT_LIMITS, run: () => new Promise<RunResult>((resolve) => (finish = resolve)) };
    const done: RunResult = { status: 'aborted', exitCode: null, signal: null, wallMs: 1, output: { text: '', tail: '', truncated: false, totalBytes: 0, overBudget: false } };
    const ep = new MathToolEpisode(config, slow);
    ep.reset(task, 1);
    const pending = ep.step(code('import time; time.sleep(9)'));
    ep.reset(task, 2);
    finish(done);
    await expect(pending).rejects.toMatchObject({ code: 'ENV_EPISODE_CLOSED' });
    expect(await ep.step('\\boxed{42}')).toMatchObject({ reward: 1, info: { turn: 1 } });
  });

  it('passes the run status on and does not count rejected programs as runs', async () => {
    const runner = fakeRunner({
      'while True: pass': { status: 'cpu_limit', exitCode: 152, signal: 'SIGXCPU', text: '' },
      'bad\u0000': { status: 'rejected', exitCode: null, detail: 'the program contains NUL characters' },
    });
    const ep = new MathToolEpisode({ ...config, max_turns: 5 }, runner);
    ep.reset(task, 1);
    const loop = await ep.step(code('while True: pass'));
    expect(loop.observation).toBe('[time limit: the program used more than 5 s of CPU time and was stopped]');
    expect(loop.info).toMatchObject({ run_status: 'cpu_limit', exit_code: 152 });
    const nul = await ep.step(code('bad\u0000'));
    expect(nul.observation).toBe('[the code was not run: the program contains NUL characters]');
    expect(await ep.step('\\boxed{42}')).toMatchObject({ info: { code_runs: 1 } });
  });
});
