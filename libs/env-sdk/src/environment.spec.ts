import { conformanceChecks } from './testing/conformance';
import { describeConformance } from './testing';
import { checkDatasetRow, createRng, defineEnvironment, EnvironmentError, extractBoxed, extractCodeBlocks, isEnvironment, parseConfig, parseTaggedAction, z } from './index';
import type { ConfigPolicy, JsonObject } from './index';

/** A complete small environment: guess the hidden number in a few turns. */
const guess = defineEnvironment({
  id: 'guess',
  version: '1.0.0',
  description: 'Guess a hidden number between 1 and max',
  turnMode: 'multi',
  taskSource: 'generator',
  configSchema: z.object({ max: z.number().int().min(2).default(10), turns: z.number().int().min(1).default(4) }).strict(),
  create: (config) => ({
    tasks: { size: (split) => (split === 'train' ? null : 20), get: (split, index) => ({ split, index }) },
    newEpisode: () => {
      let secret = 0;
      let turn = 0;
      let state: 'new' | 'open' | 'done' = 'new';
      return {
        reset: (_task, seed) => {
          secret = createRng(seed).int(1, config.max);
          turn = 0;
          state = 'open';
          return [
            { role: 'system', content: 'Answer with <guess>n</guess>.' },
            { role: 'user', content: `Guess a number from 1 to ${config.max}.` },
          ];
        },
        step: (text) => {
          if (state === 'new') throw new EnvironmentError('ENV_NOT_RESET', 'reset first');
          if (state === 'done') throw new EnvironmentError('ENV_STEP_AFTER_DONE', 'over');
          turn += 1;
          const raw = parseTaggedAction(text, 'guess');
          const n = raw !== null && /^\d+$/.test(raw) ? Number(raw) : NaN;
          const out = turn >= config.turns || n === secret;
          if (out) state = 'done';
          if (Number.isNaN(n)) return { observation: 'Invalid: use <guess>n</guess>.', reward: out ? -1 : 0, done: out, info: { valid: false } };
          return { observation: n < secret ? 'higher' : 'lower', reward: n === secret ? 1 : 0, done: out, info: { valid: true, turn } };
        },
        close: () => undefined,
      };
    },
  }),
});

describeConformance(guess, { policy: (_m, turn) => `<guess>${turn + 1}</guess>` });

describe('defineEnvironment', () => {
  it('brands and freezes; refuses bad ids', () => {
    expect(isEnvironment(guess)).toBe(true);
    expect(Object.isFrozen(guess)).toBe(true);
    expect(isEnvironment({ ...guess, $$type: 'other' })).toBe(false);
    expect(() => defineEnvironment({ ...guess, id: 'Bad Id' })).toThrow(expect.objectContaining({ code: 'ENV_INVALID_CONFIG', field: 'id' }));
  });

  it('parses configs with defaults and names bad keys', () => {
    expect(parseConfig(guess, {})).toEqual({ max: 10, turns: 4 });
    expect(() => parseConfig(guess, { maxx: 3 })).toThrow(expect.objectContaining({ field: 'config.maxx' }));
    expect(() => parseConfig(guess, { max: 1 })).toThrow(expect.objectContaining({ field: 'config.max' }));
  });
});

describe('dataset row checks', () => {
  const withCheck = defineEnvironment({
    ...guess,
    id: 'rows',
    validateRow: (row) => (typeof row.question === 'string' ? null : 'no question column'),
  });

  it('keeps the optional hook on the frozen definition and refuses a non-function', () => {
    expect(withCheck.validateRow?.({ question: 'q' })).toBeNull();
    expect('validateRow' in guess).toBe(false);
    expect(() => defineEnvironment({ ...guess, validateRow: 'yes' as never })).toThrow(expect.objectContaining({ code: 'ENV_INVALID_CONFIG', field: 'validateRow' }));
  });

  it('accepts any JSON object without the hook, and asks the hook otherwise', () => {
    expect(checkDatasetRow(guess, { anything: 1 })).toBeNull();
    expect(checkDatasetRow(withCheck, { question: 'q' })).toBeNull();
    expect(checkDatasetRow(withCheck, { answer: 1 })).toBe('no question column');
  });

  it('refuses rows that are not objects before the hook sees them', () => {
    for (const row of [null, 3, 'text', [1, 2]]) expect(checkDatasetRow(withCheck, row)).toBe('not a JSON object');
  });

  it('reports a throwing hook as the reason instead of throwing', () => {
    const throwing = defineEnvironment({
      ...guess,
      validateRow: () => {
        throw new Error('boom');
      },
    });
    expect(checkDatasetRow(throwing, {})).toBe('row check failed: boom');
  });
});

describe('the conformance kit catches broken environments', () => {
  const broken = (patch: Partial<{ reward: number; throwOnGarbage: boolean; random: boolean; info: JsonObject }>) =>
    defineEnvironment({
      ...guess,
      id: 'broken',
      create: () => ({
        tasks: { size: () => 3, get: () => ({}) },
        newEpisode: () => {
          let reset = false;
          let done = false;
          return {
            reset: () => {
              reset = true;
              return [{ role: 'user', content: patch.random ? String(Math.random()) : 'go' }];
            },
            step: (text: string) => {
              if (!reset) throw new EnvironmentError('ENV_NOT_RESET', 'reset first');
              if (done) throw new EnvironmentError('ENV_STEP_AFTER_DONE', 'over');
              if (patch.throwOnGarbage && text.length > 1000) throw new Error('boom');
              done = true;
              return { observation: '', reward: patch.reward ?? 0, done: true, info: patch.info ?? { correct: false, result: 'loss' } };
            },
            close: () => undefined,
          };
        },
      }),
    });
  const failing = async (env: unknown) => {
    const failed: string[] = [];
    for (const check of conformanceChecks(env)) await check.run().catch(() => failed.push(check.name));
    return failed;
  };

  it('passes a correct one', async () => expect(await failing(broken({}))).toEqual([]));
  it('flags non-finite rewards', async () => expect((await failing(broken({ reward: NaN }))).length).toBeGreaterThan(0));
  it('flags exceptions on garbage', async () => expect(await failing(broken({ throwOnGarbage: true }))).toEqual([expect.stringContaining('garbage')]));
  it('flags nondeterminism', async () => expect(await failing(broken({ random: true }))).toEqual([expect.stringContaining('same for the same seed')]));
  it('flags objects that are not definitions', async () => expect((await failing({ id: 'x' })).length).toBe(8));
  it('flags standard info fields of the wrong type', async () => {
    for (const info of [{ correct: 1 }, { result: 2 }, { result: 'no spaces allowed' }]) {
      expect(await failing(broken({ info }))).toEqual(expect.arrayContaining([expect.stringContaining('garbage'), expect.stringContaining('replay')]));
    }
    const messages: string[] = [];
    for (const check of conformanceChecks(broken({ info: { correct: 'yes' } }))) await check.run().catch((e: Error) => messages.push(e.message));
    expect(messages).toContainEqual(expect.stringContaining('info.correct must be a boolean, got string (see StandardInfo)'));
  });

  describe('dataset file keys', () => {
    const schema = z.object({ train_path: z.string().optional(), test_path: z.string().optional(), other: z.string().optional(), count: z.number().optional() }).strict();
    const withPolicy = (configPolicy: ConfigPolicy) => defineEnvironment({ ...guess, id: 'files', configSchema: schema, configPolicy });
    const datasetCheck = (env: unknown) => conformanceChecks(env).find((c) => c.name.startsWith('declares at most one dataset file key'))!;

    it('passes one key per split that takes a path', async () => {
      await expect(datasetCheck(withPolicy({ train_path: { set: 'dataset', split: 'train' }, test_path: { set: 'dataset', split: 'test' } })).run()).resolves.toBeUndefined();
    });
    it('flags two keys for one split', async () => {
      await expect(datasetCheck(withPolicy({ train_path: { set: 'dataset', split: 'train' }, other: { set: 'dataset', split: 'train' } })).run()).rejects.toThrow(
        'configPolicy marks both train_path and other as the train dataset file; a host fills only train_path',
      );
    });
    it('flags a key the schema does not have or that takes no path', async () => {
      await expect(datasetCheck(withPolicy({ data_file: { set: 'dataset', split: 'train' } })).run()).rejects.toThrow(
        /configPolicy\.data_file is the train dataset file, but the config schema refuses a path/,
      );
      await expect(datasetCheck(withPolicy({ count: { set: 'dataset', split: 'test' } })).run()).rejects.toThrow(/configPolicy\.count is the test dataset file/);
    });
  });
});

describe('helpers', () => {
  it('parses the last tagged action', () => {
    expect(parseTaggedAction('<move>1,2</move> then <move> 3,4 </move>', 'move')).toBe('3,4');
    expect(parseTaggedAction('<move>1,2', 'move')).toBeNull();
    expect(parseTaggedAction('</move>', 'move')).toBeNull();
  });

  it('extracts python blocks', () => {
    expect(extractCodeBlocks('a\n```python\nprint(1)\n```\nb\n```py\nx=2\n```\n```js\nno()\n```')).toEqual(['print(1)', 'x=2']);
    expect(extractCodeBlocks('```python\nunclosed')).toEqual([]);
  });

  it('extracts the last boxed answer with nested braces, never throwing', () => {
    expect(extractBoxed('\\boxed{1} and \\boxed{\\frac{1}{2}}')).toBe('\\frac{1}{2}');
    expect(extractBoxed('\\boxed{\\{1,2\\}}')).toBe('\\{1,2\\}');
    expect(extractBoxed('\\boxed 5$')).toBe('5');
    expect(extractBoxed('\\boxed{unclosed')).toBeNull();
    expect(extractBoxed('nothing')).toBeNull();
  });

  it('seeds a deterministic generator', () => {
    const a = createRng(5);
    const b = createRng(5);
    const xs = Array.from({ length: 5 }, () => a.int(1, 100));
    expect(Array.from({ length: 5 }, () => b.int(1, 100))).toEqual(xs);
    expect(createRng(6).int(1, 1_000_000)).not.toBe(createRng(5).int(1, 1_000_000));
    const counts = [0, 0, 0];
    const r = createRng(1);
    for (let i = 0; i < 3000; i++) counts[r.int(0, 2)]++;
    for (const c of counts) expect(c).toBeGreaterThan(900);
  });
});
