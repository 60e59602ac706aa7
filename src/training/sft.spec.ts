import type { Episode, Message, StepResult } from '@opentinker/env-sdk';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { modelSpec } from '../rollout/rl-spec';
import { loadPolicy, type Policy } from '../rollout/policy';
import { renderTarget, replayScript, sftBatch } from './sft';

const TASK = { question: '347*958=', ground_truth: '332426', extra_info: { expression: '347*958' } };
const TURNS = ['```py\nprint({extra_info.expression})\n```', '\\boxed{{ground_truth}}'];

/**
 * A math-tool-like episode: the first step answers `332426\n` as a tool message, the second ends the
 * episode. Records the calls. `doneAfter` ends it earlier; `badStep` returns a malformed result.
 */
function scriptedEpisode(calls: string[], opts: { doneAfter?: number; badStep?: boolean; observation?: string } = {}): Episode<unknown> {
  let n = 0;
  return {
    reset(task: unknown, seed: number): Message[] {
      calls.push(`reset ${(task as typeof TASK).question} ${seed}`);
      return [{ role: 'user', content: (task as typeof TASK).question }];
    },
    step(action: string): StepResult {
      n++;
      calls.push(`step ${action}`);
      if (opts.badStep) return { observation: 'x', reward: Number.NaN, done: false, info: {} };
      const done = n >= (opts.doneAfter ?? 2);
      return done ? { observation: '', reward: 1, done, info: {} } : { observation: opts.observation ?? '332426\n', observationRole: 'tool', reward: 0, done, info: {} };
    },
    close() {
      calls.push('close');
    },
  };
}

/** A game-like episode: step n answers `board n` and `info.hint` `"n,n"`, and ends the episode at step `doneAfter`. */
function hintedEpisode(calls: string[], doneAfter: number): Episode<unknown> {
  let n = 0;
  return {
    reset: () => [{ role: 'user', content: 'board 0\n' }],
    step(action: string): StepResult {
      n++;
      calls.push(action);
      return n >= doneAfter ? { observation: '', reward: 1, done: true, info: {} } : { observation: `board ${n}\n`, reward: 0, done: false, info: { hint: `${n},${n}` } };
    },
    close: () => undefined,
  };
}

const paths = { hostRoot: process.cwd(), pluginsDir: '', home: tmpdir(), jobsDir: join(tmpdir(), 'jobs'), datasetsDir: join(tmpdir(), 'datasets'), modelRoots: [] };
let chatml: Policy;
let plain: Policy;

beforeAll(async () => {
  chatml = await loadPolicy(modelSpec.parse({ preset: 'tiny-char' }), { paths, log: () => undefined });
  plain = await loadPolicy(modelSpec.parse({ preset: 'tiny-char', chat_template: 'plain' }), { paths, log: () => undefined });
});
afterAll(() => {
  chatml.dispose();
  plain.dispose();
});

describe('renderTarget', () => {
  it('fills {field} and {a.b} from the task and leaves other braces', () => {
    expect(renderTarget(TURNS[0], TASK)).toBe('```py\nprint(347*958)\n```');
    expect(renderTarget(TURNS[1], TASK)).toBe('\\boxed{332426}');
  });

  it('names the key and the missing field', () => {
    expect(() => renderTarget('{extra_info.nope}', TASK)).toThrow('sft.target: the task has no text field extra_info.nope');
    expect(() => renderTarget('{extra_info}', TASK, 'sft.turns[1]')).toThrow('sft.turns[1]: the task has no text field extra_info (it is object)');
  });

  it("given the previous step's info, {info.x} reads it and other fields still read the task", () => {
    expect(renderTarget('{info.hint} for {question}', TASK, 'sft.turns[1]', { hint: '2,3' })).toBe('2,3 for 347*958=');
    expect(() => renderTarget('{info.nope}', TASK, 'sft.turns[1]', { hint: '2,3' })).toThrow("sft.turns[1]: the previous step's info has no text field nope");
    // On the first turn there is no step yet: {info.x} is looked up in the task, which has none.
    expect(() => renderTarget('{info.hint}', TASK, 'sft.turns[0]')).toThrow('sft.turns[0]: the task has no text field info.hint');
  });
});

describe('replayScript', () => {
  it('plays the script through the episode and records the conversation as the template renders it (ChatML)', async () => {
    const calls: string[] = [];
    const e = (await replayScript(chatml, scriptedEpisode(calls), TASK, TURNS, 7))!;
    // Each turn's rendered text is what the environment was stepped with; nothing after the last turn.
    expect(calls).toEqual(['reset 347*958= 7', 'step ```py\nprint(347*958)\n```']);

    const conversation: Message[] = [
      { role: 'user', content: '347*958=' },
      { role: 'assistant', content: '```py\nprint(347*958)\n```' },
      { role: 'tool', content: '332426\n' },
      { role: 'assistant', content: '\\boxed{332426}' },
    ];
    // Token for token a render of the whole conversation, up to the last turn's stop token.
    const ids = [...e.promptIds, ...e.responseIds];
    expect(e.promptIds).toEqual(chatml.renderPrompt(conversation.slice(0, 1)));
    expect(ids).toEqual(chatml.renderPrompt(conversation).slice(0, ids.length));
    const imEnd = chatml.stopTokenIds[0];
    expect(ids[ids.length - 1]).toBe(imEnd);

    // Loss on the two assistant turns and their stop tokens, never on the tool message or its frame.
    const learned = e.responseIds.filter((_, i) => e.lossMask![i] === 1);
    const turn = (text: string) => [...chatml.tokenizer.encode(text), imEnd];
    expect(learned).toEqual([...turn('```py\nprint(347*958)\n```'), ...turn('\\boxed{332426}')]);
    const env = e.responseIds.filter((_, i) => e.lossMask![i] === 0);
    expect(chatml.tokenizer.decode(env)).toBe('\n<|im_start|>tool\n332426\n<|im_end|>\n<|im_start|>assistant\n');
    expect(e.lossMask).toHaveLength(e.responseIds.length);
  });

  it('plain template: the tool output follows the turn with no role markers, masked', async () => {
    const e = (await replayScript(plain, scriptedEpisode([]), TASK, TURNS, 1))!;
    const eos = plain.stopTokenIds[0];
    const text = (ids: number[]) => plain.tokenizer.decode(ids, { skipSpecial: true });
    expect(text(e.promptIds)).toBe('347*958=');
    const firstTurn = [...plain.tokenizer.encode('```py\nprint(347*958)\n```'), eos];
    const output = plain.tokenizer.encode('332426\n');
    const secondTurn = [...plain.tokenizer.encode('\\boxed{332426}'), eos];
    expect(e.responseIds).toEqual([...firstTurn, ...output, ...secondTurn]);
    expect(e.lossMask).toEqual([...firstTurn.map(() => 1), ...output.map(() => 0), ...secondTurn.map(() => 1)]);
  });

  it('one turn is the single-target example (no step)', async () => {
    const calls: string[] = [];
    const e = (await replayScript(plain, scriptedEpisode(calls), TASK, ['{ground_truth}'], 1))!;
    expect(calls).toEqual(['reset 347*958= 1']);
    expect(e.responseIds).toEqual([...plain.tokenizer.encode('332426'), plain.stopTokenIds[0]]);
    expect(e.lossMask).toEqual(e.responseIds.map(() => 1));
  });

  it('returns null once the conversation outgrows the context, without stepping further', async () => {
    const calls: string[] = [];
    const long = { ...plain, contextLength: 40 };
    expect(await replayScript(long, scriptedEpisode(calls, { observation: 'y'.repeat(30) }), TASK, TURNS, 1)).toBeNull();
    expect(calls).toHaveLength(2);
    const tiny = { ...plain, contextLength: 20 };
    const calls2: string[] = [];
    expect(await replayScript(tiny, scriptedEpisode(calls2), TASK, TURNS, 1)).toBeNull();
    expect(calls2).toEqual(['reset 347*958= 1']);
  });

  it('refuses an episode that ends before the script does, and a malformed step result', async () => {
    await expect(replayScript(plain, scriptedEpisode([], { doneAfter: 1 }), TASK, [...TURNS, 'more'], 1)).rejects.toThrow(
      'sft.turns: the environment ended the episode after turn 1 of 3 (reward 1)',
    );
    await expect(replayScript(plain, scriptedEpisode([], { badStep: true }), TASK, TURNS, 1)).rejects.toThrow(
      'step: the answer does not fit the protocol (reward: Invalid input: expected number, received NaN)',
    );
  });

  it("fills each turn's {info.x} from the step before it", async () => {
    const calls: string[] = [];
    const e = (await replayScript(plain, hintedEpisode(calls, 9), TASK, ['{ground_truth}', 'at {info.hint}'], 1))!;
    expect(calls).toEqual(['332426']);
    expect(plain.tokenizer.decode(e.responseIds, { skipSpecial: true })).toBe('332426board 1\nat 1,1');
  });

  it('repeatLast: the last template repeats until the environment ends the episode, without an error', async () => {
    const calls: string[] = [];
    const e = (await replayScript(plain, hintedEpisode(calls, 4), TASK, ['0,0', '{info.hint}'], 1, { repeatLast: true, maxTurns: 13 }))!;
    expect(calls).toEqual(['0,0', '1,1', '2,2', '3,3']);
    const eos = plain.stopTokenIds[0];
    const turn = (text: string) => [...plain.tokenizer.encode(text), eos];
    const obs = (n: number) => plain.tokenizer.encode(`board ${n}\n`);
    // Every turn is learned, the winning last one included; nothing follows it.
    expect(e.responseIds).toEqual([...turn('0,0'), ...obs(1), ...turn('1,1'), ...obs(2), ...turn('2,2'), ...obs(3), ...turn('3,3')]);
    expect(e.responseIds.filter((_, i) => e.lossMask![i] === 1)).toEqual([...turn('0,0'), ...turn('1,1'), ...turn('2,2'), ...turn('3,3')]);
  });

  it('repeatLast: at most maxTurns turns, the last one not stepped; an episode that ends inside the fixed part is still an error', async () => {
    const calls: string[] = [];
    const e = (await replayScript(plain, hintedEpisode(calls, 99), TASK, ['0,0', '{info.hint}'], 1, { repeatLast: true, maxTurns: 3 }))!;
    expect(calls).toEqual(['0,0', '1,1']);
    expect(e.lossMask!.filter((m, i) => m === 1 && e.responseIds[i] === plain.stopTokenIds[0])).toHaveLength(3);
    await expect(replayScript(plain, hintedEpisode([], 1), TASK, ['0,0', 'a', '{info.hint}'], 1, { repeatLast: true, maxTurns: 13 })).rejects.toThrow(
      'sft.turns: the environment ended the episode after turn 1 of 3 (reward 1)',
    );
  });
});

describe('sftBatch', () => {
  it('puts the loss on learned response tokens only and counts them', () => {
    const { batch, coefficients, tokens } = sftBatch(
      [
        { promptIds: [1, 2], responseIds: [3, 4, 5, 6], lossMask: [1, 0, 0, 1] },
        { promptIds: [1], responseIds: [7, 8] },
      ],
      0,
    );
    expect(tokens).toBe(4);
    expect(batch.seqLen).toBe(6);
    // Token-aligned weights: non-zero exactly where a learned token is predicted.
    const coef = coefficients.logProbCoef;
    const weighted = (row: number) => Array.from({ length: batch.seqLen }, (_, t) => t).filter((t) => coef[row * batch.seqLen + t] !== 0);
    expect([weighted(0), weighted(1)]).toEqual([
      [2, 5],
      [1, 2],
    ]);
    expect(coef[2]).toBeCloseTo(-1 / 4);
  });
});

describe('SFT examples', () => {
  it('renders the target from task fields, keeping other braces', () => {
    expect(renderTarget('\\boxed{{ground_truth}}', { ground_truth: '42' })).toBe('\\boxed{42}');
    expect(renderTarget('{a.b} and {n}', { a: { b: 'x' }, n: 3 })).toBe('x and 3');
    expect(() => renderTarget('{answer}', { ground_truth: '1' })).toThrow(/no text field answer/);
    expect(() => renderTarget('{a}', { a: { b: 1 } })).toThrow(/it is object/);
  });

  it('puts the loss on the response tokens only, as a mean over them', () => {
    const { batch, coefficients, tokens } = sftBatch(
      [
        { promptIds: [1, 2, 3], responseIds: [4, 5] },
        { promptIds: [1], responseIds: [6, 7, 8] },
      ],
      0,
    );
    expect(tokens).toBe(5);
    expect(batch.seqLen).toBe(5);
    const c = Array.from(coefficients.logProbCoef, (x) => (x === 0 ? 0 : x));
    expect(c).toEqual([0, 0, 0, -0.2, -0.2, 0, -0.2, -0.2, -0.2, 0].map((x) => (x === 0 ? 0 : expect.closeTo(x, 6))));
  });
});
