import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeConformance } from '@opentinker/env-sdk/testing';
import { configJsonSchema, parseConfig } from '@opentinker/env-sdk';
import math from './index';
import type { MathTask } from './index';

const ctx = { workDir: tmpdir(), log: () => undefined };

// Synthetic source: a policy that sometimes boxes a number and sometimes rambles.
describeConformance(math, {
  config: { difficulty: 3 },
  policy: (messages, turn) => (turn % 2 === 0 ? `The answer is \\boxed{${messages.length}}.` : 'no idea'),
});

// Equation style: a policy that answers some sums right on its first line and rambles otherwise.
describeConformance(math, {
  config: { difficulty: 3, style: 'equation' },
  policy: (messages, turn) => {
    const m = /^(\d+)\+(\d+)=$/.exec(messages[messages.length - 1]?.content ?? '');
    return m && turn % 2 === 0 ? `${Number(m[1]) + Number(m[2])}\nok` : 'no idea';
  },
});

// Dataset source: a tiny verl-layout JSONL written before the checks are registered.
const fixtureDir = mkdtempSync(join(tmpdir(), 'env-math-conformance-'));
const fixture = join(fixtureDir, 'tiny.jsonl');
writeFileSync(
  fixture,
  [
    { data_source: 'openai/gsm8k', prompt: [{ role: 'user', content: 'What is 6 times 7?' }], reward_model: { style: 'rule', ground_truth: '42' } },
    { data_source: 'DigitalLearningGmbH/MATH-lighteval', prompt: 'What is half of 3?', reward_model: { ground_truth: '\\frac{3}{2}' } },
  ]
    .map((r) => JSON.stringify(r))
    .join('\n'),
);
describeConformance(math, { config: { train_path: fixture, test_path: fixture }, policy: () => '#### 42' });
// The same rows scored by verl's scorers (gsm8k and math_reward).
describeConformance(math, { config: { train_path: fixture, test_path: fixture, grader: 'verl' }, policy: (_m, turn) => (turn % 2 ? '#### 42' : '\\boxed{\\frac{3}{2}}') });
afterAll(() => rmSync(fixtureDir, { recursive: true, force: true }));

async function episodeOn(config: Record<string, unknown>, task?: Partial<MathTask>) {
  const inst = await math.create(parseConfig(math, config), ctx);
  const t = { ...((await inst.tasks.get('test', 0)) as MathTask), ...task };
  const episode = inst.newEpisode();
  const messages = await episode.reset(t, 0);
  return { inst, task: t, episode, messages };
}

describe('math environment', () => {
  it('rewards a correct boxed answer with 1 and reports what it graded', async () => {
    const { task, episode, messages } = await episodeOn({ difficulty: 1 });
    expect(messages).toEqual([{ role: 'user', content: expect.stringContaining("Let's think step by step and output the final answer within \\boxed{}.") }]);
    const result = await episode.step(`Counting carefully, the total is $\\boxed{${task.ground_truth}}$.`);
    expect(result).toEqual({
      observation: '',
      reward: 1,
      done: true,
      info: { correct: true, extracted: task.ground_truth, verdict: 'correct', ground_truth: task.ground_truth, data_source: 'opentinker/synthetic-arithmetic' },
    });
  });

  it('gives 0 for a wrong answer and format_penalty when there is no answer', async () => {
    const wrong = await episodeOn({ format_penalty: -0.5 }, { ground_truth: '12' });
    expect(await wrong.episode.step('\\boxed{13}')).toMatchObject({ reward: 0, done: true, info: { correct: false, extracted: '13', ground_truth: '12' } });
    const none = await episodeOn({ format_penalty: -0.5 }, { ground_truth: '12' });
    expect(await none.episode.step('It is twelve, I think.')).toMatchObject({ reward: -0.5, info: { correct: false, extracted: null } });
    const defaults = await episodeOn({}, { ground_truth: '12' });
    expect((await defaults.episode.step('')).reward).toBe(0);
  });

  it('sends the optional system prompt first', async () => {
    const { messages } = await episodeOn({ system_prompt: 'You are a careful mathematician.' });
    expect(messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(messages[0].content).toBe('You are a careful mathematician.');
  });

  it("reads the task's data source convention first, and wants every stated answer to agree", async () => {
    const gsm = await episodeOn({}, { ground_truth: '7', data_source: 'openai/gsm8k' });
    expect(await gsm.episode.step('3 + 4 = 7\n#### 7')).toMatchObject({ reward: 1, info: { extracted: '7', verdict: 'correct' } });
    const both = await episodeOn({}, { ground_truth: '7', data_source: 'openai/gsm8k' });
    expect(await both.episode.step('\\boxed{8} hmm\n#### 7')).toMatchObject({ reward: 0, info: { extracted: '7', verdict: 'several_answers' } });
    const mathTask = await episodeOn({}, { ground_truth: '7', data_source: 'DigitalLearningGmbH/MATH-lighteval' });
    expect(await mathTask.episode.step('\\boxed{8} hmm\n#### 7')).toMatchObject({ reward: 0, info: { extracted: '8', verdict: 'several_answers' } });
    const hedge = await episodeOn({}, { ground_truth: '7' });
    expect(await hedge.episode.step('It is either \\boxed{7} or 8.')).toMatchObject({ reward: 0, info: { correct: false, verdict: 'hedged' } });
  });

  it('honours mixed_numbers', async () => {
    const off = await episodeOn({}, { ground_truth: '\\frac{5}{2}' });
    expect((await off.episode.step('\\boxed{2\\frac12}')).reward).toBe(0);
    const on = await episodeOn({ mixed_numbers: true }, { ground_truth: '\\frac{5}{2}' });
    expect((await on.episode.step('\\boxed{2\\frac12}')).reward).toBe(1);
  });

  it("takes OpenTinker's env kwargs without a prompt (its clients keep the prompt): MathGame's opening, then the grade", async () => {
    const inst = await math.create(parseConfig(math, {}), ctx);
    const kwargs = { ground_truth: '5', data_source: 'DigitalLearningGmbH/MATH-lighteval', extra_info: { index: 0, question: 'What is 2+3?' } };
    const episode = inst.newEpisode();
    expect(episode.reset(kwargs as unknown as MathTask, 0)).toEqual([{ role: 'user', content: 'Please solve the following problem:\n\nWhat is 2+3?' }]);
    expect(await episode.step('\\boxed{5}')).toMatchObject({ reward: 1, done: true, info: { correct: true, ground_truth: '5' } });
    const bare = inst.newEpisode();
    expect(bare.reset({ ground_truth: 7 } as unknown as MathTask, 0)).toEqual([{ role: 'user', content: 'Please solve the following problem:' }]);
    expect((await bare.step('\\boxed{6}')).reward).toBe(0);
    // A text prompt is one user message; a malformed one is refused.
    expect(inst.newEpisode().reset({ prompt: 'What is 1+1?', ground_truth: '2' } as unknown as MathTask, 0)).toEqual([{ role: 'user', content: 'What is 1+1?' }]);
    for (const prompt of ['', [], [{ role: 'user' }], 42]) {
      expect(() => inst.newEpisode().reset({ prompt, ground_truth: '2' } as unknown as MathTask, 0)).toThrow(expect.objectContaining({ code: 'ENV_INVALID_TASK' }));
    }
    expect(() => inst.newEpisode().reset({ data_source: 'math' } as unknown as MathTask, 0)).toThrow(expect.objectContaining({ code: 'ENV_INVALID_TASK' }));
  });

  it('refuses steps out of order and tasks without a ground truth, with codes', async () => {
    const inst = await math.create(parseConfig(math, {}), ctx);
    const fresh = inst.newEpisode();
    expect(() => fresh.step('x')).toThrow(expect.objectContaining({ code: 'ENV_NOT_RESET' }));
    const task = (await inst.tasks.get('test', 0)) as MathTask;
    expect(() => inst.newEpisode().reset({ ...task, ground_truth: '' }, 0)).toThrow(expect.objectContaining({ code: 'ENV_INVALID_TASK' }));
    expect(() => inst.newEpisode().reset(null as unknown as MathTask, 0)).toThrow(expect.objectContaining({ code: 'ENV_INVALID_TASK' }));
    const episode = inst.newEpisode();
    episode.reset(task, 0);
    episode.step('\\boxed{1}');
    expect(() => episode.step('\\boxed{1}')).toThrow(expect.objectContaining({ code: 'ENV_STEP_AFTER_DONE' }));
    episode.reset(task, 1);
    expect((await episode.step(`\\boxed{${task.ground_truth}}`)).reward).toBe(1);
    episode.close();
    expect(() => episode.step('x')).toThrow(expect.objectContaining({ code: 'ENV_EPISODE_CLOSED' }));
  });

  it("poses bare equations with style: 'equation' and grades the first line as the answer", async () => {
    const { task, episode, messages } = await episodeOn({ difficulty: 3, style: 'equation' });
    expect(messages).toEqual([{ role: 'user', content: expect.stringMatching(/^\d{1,3}\+\d{1,3}=$/) }]);
    expect(await episode.step(`${task.ground_truth}\n`)).toEqual({
      observation: '',
      reward: 1,
      done: true,
      info: { correct: true, extracted: task.ground_truth, verdict: 'correct', ground_truth: task.ground_truth, data_source: 'opentinker/synthetic-equation' },
    });
    const copy = await episodeOn({ difficulty: 3, style: 'equation', format_penalty: -1 });
    expect(await copy.episode.step(copy.messages[0].content.slice(0, -1))).toMatchObject({ reward: 0, info: { correct: false } });
    expect((await (await episodeOn({ difficulty: 3, style: 'equation', format_penalty: -1 })).episode.step('')).reward).toBe(-1);
    await expect(math.create(parseConfig(math, { style: 'equation', train_path: fixture }), ctx)).rejects.toMatchObject({
      code: 'ENV_INVALID_CONFIG',
      field: 'config.style',
    });
  });

  it('validates its config: defaults, ranges, unknown keys', () => {
    expect(parseConfig(math, {})).toEqual({
      difficulty: 2,
      seed: 0,
      test_size: 200,
      invalid_rows: 'skip',
      system_prompt: '',
      format_penalty: 0,
      mixed_numbers: false,
      grader: 'strict',
      verl_gsm8k_method: 'strict',
      verl_strict_box_verify: false,
    });
    expect(() => parseConfig(math, { grader: 'lenient' })).toThrow(expect.objectContaining({ field: 'config.grader' }));
    expect(() => parseConfig(math, { difficulty: 6 })).toThrow(expect.objectContaining({ code: 'ENV_INVALID_CONFIG', field: 'config.difficulty' }));
    expect(() => parseConfig(math, { source: 'web' })).toThrow(expect.objectContaining({ field: 'config.source' }));
    expect(() => parseConfig(math, { style: 'latex' })).toThrow(expect.objectContaining({ field: 'config.style' }));
    expect(() => parseConfig(math, { difficulty_level: 2 })).toThrow(expect.objectContaining({ field: 'config.difficulty_level' }));
    const schema = configJsonSchema(math) as { properties: Record<string, unknown> };
    expect(Object.keys(schema.properties)).toEqual(
      expect.arrayContaining(['source', 'difficulty', 'style', 'seed', 'test_size', 'train_path', 'test_path', 'invalid_rows', 'system_prompt', 'format_penalty', 'mixed_numbers']),
    );
  });

  describe("grader: 'verl'", () => {
    const verl = (task: Partial<MathTask>, extra: Record<string, unknown> = {}) =>
      episodeOn({ train_path: fixture, test_path: fixture, grader: 'verl', ...extra }, { prompt: [{ role: 'user', content: 'q' }], ...task });

    it("rewards what verl's scorer for the data source returns", async () => {
      const step = async (task: Partial<MathTask>, response: string, extra?: Record<string, unknown>) => await (await verl(task, extra)).episode.step(response);
      // gsm8k: 1.0, 0.0 for a wrong number, 0 when nothing is extracted ("#### " needs one space).
      expect(await step({ data_source: 'openai/gsm8k', ground_truth: '72' }, '#### 72')).toMatchObject({
        reward: 1,
        info: { correct: true, scorer: 'gsm8k', grader: 'verl', extracted: '72' },
      });
      expect(await step({ data_source: 'openai/gsm8k', ground_truth: '72' }, '####72')).toMatchObject({ reward: 0, info: { correct: false, extracted: null } });
      expect((await step({ data_source: 'openai/gsm8k', ground_truth: '72' }, 'so 72', { verl_gsm8k_method: 'flexible' })).reward).toBe(1);
      // math_reward: string equality after strip_string, so 1,000 is not 1000.
      expect(await step({ data_source: 'HuggingFaceH4/MATH-500', ground_truth: '1000' }, '\\boxed{1,000}')).toMatchObject({ reward: 0, info: { scorer: 'math_reward' } });
      expect((await step({ data_source: 'lighteval/MATH', ground_truth: '\\frac{1}{2}' }, '\\boxed{0.5}')).reward).toBe(1);
      // math_dapo: +1 / -1 on the Answer: line; strict_box_verify compares the last box as is.
      expect(await step({ data_source: 'math_dapo', ground_truth: '204' }, 'Answer: 204 ways')).toMatchObject({ reward: 1, info: { scorer: 'math_dapo', extracted: '204' } });
      expect((await step({ data_source: 'aime2024', ground_truth: '5' }, '\\boxed{5}')).reward).toBe(-1);
      expect((await step({ data_source: 'math', ground_truth: '5' }, '\\boxed{5}', { verl_strict_box_verify: true })).reward).toBe(1);
      // The raw ground truth is what verl compares: a full GSM8K solution as ground truth never matches.
      expect((await step({ data_source: 'openai/gsm8k', ground_truth: 'so 72\n#### 72' }, '#### 72')).reward).toBe(0);
    });

    it('refuses what verl cannot score, with codes', async () => {
      await expect(math.create(parseConfig(math, { grader: 'verl' }), ctx)).rejects.toMatchObject({ code: 'ENV_INVALID_CONFIG', field: 'config.grader' });
      await expect(math.create(parseConfig(math, { train_path: fixture, grader: 'verl', format_penalty: -1 }), ctx)).rejects.toMatchObject({
        code: 'ENV_INVALID_CONFIG',
        field: 'config.format_penalty',
      });
      await expect(verl({ data_source: 'numina_olympiads', ground_truth: '1' })).rejects.toMatchObject({ code: 'ENV_INVALID_TASK', field: 'task.data_source' });
    });
  });

  it('declares itself as a single-turn, data-dependent environment with id math', () => {
    expect(math.id).toBe('math');
    expect(math.turnMode).toBe('single');
    expect(math.taskSource).toBe('dataset');
  });
});
