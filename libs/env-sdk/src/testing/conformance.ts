import { tmpdir } from 'node:os';
import { configJsonSchema, isEnvironment, parseConfig } from '../environment';
import type { Environment, EnvironmentInstance, Split, StepResult } from '../environment';
import { isEnvironmentError } from '../errors';
import type { Message } from '../messages';
import { parseResetAnswer, parseStepAnswer } from '../protocol';
import { standardInfoProblem } from '../step-info';

/** How {@link conformanceChecks} and {@link describeConformance} exercise an environment. */
export interface ConformanceOptions {
  /** Raw config to test with (defaults are filled by the environment's schema). */
  config?: unknown;
  /** Seeds for the determinism checks. Default `[1, 2, 3]`. */
  seeds?: number[];
  /**
   * Plausible actions for a trajectory, given the conversation so far: used to check that replays are
   * deterministic beyond the first step. Default: garbage and empty actions only.
   */
  policy?: (messages: Message[], turn: number) => string;
  /** Steps after which a multi-turn episode played with {@link policy} must be done. Default 200. */
  maxSteps?: number;
  /** Longest a single step may take. Default 2000 ms. */
  stepTimeoutMs?: number;
  /** Scratch folder handed to `create`. Default: the OS temp dir. */
  workDir?: string;
}

/** Actions a policy might emit by accident; the environment must answer each with an observation. */
export const GARBAGE_ACTIONS: readonly string[] = [
  '',
  ' ',
  'x'.repeat(100 * 1024),
  '\u0000\u0001\u0002\uffff\ud800',
  'عربى 中文 🎲🎲 \u202e reversed',
  '<move>',
  '</move><move>-1,-1</move>',
  '\\boxed{',
  '```python\n',
  '{"json": true}',
];

/** One named check; `run` rejects with what is wrong. */
export interface ConformanceCheck {
  /** What the check asserts, e.g. `the same seed and actions replay the same trajectory`. */
  name: string;
  run(): Promise<void>;
}

/**
 * The checks every environment must pass, as named async functions. Use {@link describeConformance}
 * in Jest, or run them yourself.
 *
 * @example
 * ```ts
 * import { conformanceChecks } from '@opentinker/env-sdk/testing';
 * for (const check of conformanceChecks(env, { seeds: [1, 2] })) {
 *   await check.run().then(() => console.log('ok', check.name), (e) => console.error('FAIL', check.name, e.message));
 * }
 * ```
 */
export function conformanceChecks(env: unknown, options: ConformanceOptions = {}): ConformanceCheck[] {
  const seeds = options.seeds ?? [1, 2, 3];
  const timeout = options.stepTimeoutMs ?? 2000;
  const maxSteps = options.maxSteps ?? 200;
  const ctx = { workDir: options.workDir ?? tmpdir(), log: () => undefined };
  let instance: EnvironmentInstance<unknown> | undefined;
  const get = async (): Promise<[Environment<unknown, unknown>, EnvironmentInstance<unknown>]> => {
    assert(isEnvironment(env), 'the default export is not a branded environment (use defineEnvironment)');
    instance ??= await env.create(parseConfig(env, options.config ?? {}), ctx);
    return [env, instance];
  };
  const withTimeout = async <T>(what: string, work: () => T | Promise<T>): Promise<T> => {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        Promise.resolve().then(work),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`${what} took longer than ${timeout} ms`)), timeout);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  };
  const firstTask = async (inst: EnvironmentInstance<unknown>) => inst.tasks.get('test', 0);
  const play = async (inst: EnvironmentInstance<unknown>, seed: number, actions: 'policy' | string[]) => {
    const episode = inst.newEpisode();
    const messages = [...(await episode.reset(await firstTask(inst), seed))];
    const steps: StepResult[] = [];
    try {
      for (let turn = 0; turn < maxSteps; turn++) {
        const action = actions === 'policy' ? (options.policy ? options.policy(messages, turn) : GARBAGE_ACTIONS[turn % GARBAGE_ACTIONS.length]) : actions[turn];
        if (action === undefined) break;
        const result = await withTimeout(`step ${turn}`, () => episode.step(action));
        checkStep(result, `step ${turn} (seed ${seed})`);
        steps.push(result);
        messages.push({ role: 'assistant', content: action });
        if (result.done) break;
        messages.push({ role: result.observationRole ?? 'user', content: result.observation });
      }
    } finally {
      await episode.close();
    }
    return { first: messages, steps, actions: messages.filter((m) => m.role === 'assistant').map((m) => m.content) };
  };

  return [
    {
      name: 'is a branded definition with a valid id, version and config schema',
      run: async () => {
        assert(isEnvironment(env), 'not a branded environment');
        assert(Object.isFrozen(env), 'the definition must be frozen');
        assert(/^[a-z][a-z0-9-]*$/.test(env.id), `bad id ${env.id}`);
        assert(typeof env.version === 'string' && env.version.length > 0, 'missing version');
        assert(typeof env.description === 'string' && env.description.length > 0, 'missing description');
        const schema = configJsonSchema(env);
        assert(typeof schema === 'object' && schema !== null, 'config schema has no JSON Schema');
        parseConfig(env, options.config ?? {});
        let refused = false;
        try {
          parseConfig(env, { __surely_not_a_key__: 1 });
        } catch (e) {
          refused = isEnvironmentError(e) && e.code === 'ENV_INVALID_CONFIG';
        }
        assert(refused, 'unknown config keys must be refused with ENV_INVALID_CONFIG (use a strict schema)');
      },
    },
    {
      name: 'declares at most one dataset file key per split, each a config key that takes a path',
      run: async () => {
        assert(isEnvironment(env), 'not a branded environment');
        const seen = new Map<Split, string>();
        for (const [key, p] of Object.entries(env.configPolicy ?? {})) {
          if (!('set' in p) || p.set !== 'dataset') continue;
          const first = seen.get(p.split);
          assert(first === undefined, `configPolicy marks both ${first} and ${key} as the ${p.split} dataset file; a host fills only ${first}`);
          seen.set(p.split, key);
          try {
            parseConfig(env, { ...((options.config as Record<string, unknown> | undefined) ?? {}), [key]: '/datasets/uploaded.jsonl' });
          } catch (e) {
            // Only a refusal of the key itself matters: other keys may depend on it (math's `source`).
            const field = isEnvironmentError(e) ? e.field : undefined;
            assert(field !== `config.${key}`, `configPolicy.${key} is the ${p.split} dataset file, but the config schema refuses a path for it: ${(e as Error).message}`);
          }
        }
      },
    },
    {
      name: 'serves tasks: sizes, JSON-serialisable and deterministic by index',
      run: async () => {
        const [, inst] = await get();
        const test = inst.tasks.size('test');
        assert(test === null || (Number.isInteger(test) && test > 0), `test split size must be a positive integer or null, got ${test}`);
        const train = inst.tasks.size('train');
        assert(train === null || (Number.isInteger(train) && train >= 0), `train split size must be an integer or null, got ${train}`);
        for (const split of ['test', 'train'] as const) {
          if (inst.tasks.size(split) === 0) continue;
          const a = await inst.tasks.get(split, 0);
          const b = await inst.tasks.get(split, 0);
          assertJson(a, `${split} task 0`);
          assert(JSON.stringify(a) === JSON.stringify(b), `${split} task 0 differs between two reads`);
        }
      },
    },
    {
      name: 'reset gives well-formed first messages, the same for the same seed',
      run: async () => {
        const [, inst] = await get();
        for (const seed of seeds) {
          const a = inst.newEpisode();
          const b = inst.newEpisode();
          const task = await firstTask(inst);
          const ma = await a.reset(task, seed);
          const mb = await b.reset(task, seed);
          await a.close();
          await b.close();
          conforms(() => parseResetAnswer(ma, `reset (seed ${seed})`));
          assert(ma[ma.length - 1].role === 'user', 'the last first message must be the user turn the policy answers');
          assert(JSON.stringify(ma) === JSON.stringify(mb), `seed ${seed}: two resets gave different messages`);
        }
      },
    },
    {
      name: 'replays the same trajectory for the same seed and actions',
      run: async () => {
        const [, inst] = await get();
        for (const seed of seeds) {
          const a = await play(inst, seed, 'policy');
          const b = await play(inst, seed, a.actions);
          assert(JSON.stringify(a.steps) === JSON.stringify(b.steps), `seed ${seed}: replay differs`);
        }
      },
    },
    {
      name: 'answers garbage actions (empty, 100 KB, binary, unicode, broken tags) with an observation, never an exception or a hang',
      run: async () => {
        const [, inst] = await get();
        for (const action of GARBAGE_ACTIONS) {
          const episode = inst.newEpisode();
          await episode.reset(await firstTask(inst), 7);
          try {
            checkStep(await withTimeout(`step(${JSON.stringify(action.slice(0, 20))})`, () => episode.step(action)), 'garbage step');
          } finally {
            await episode.close();
          }
        }
      },
    },
    {
      name: 'ends within the step limit, honours its turn mode, and refuses step after done with a code',
      run: async () => {
        const [environment, inst] = await get();
        const { steps, actions } = await play(inst, 11, 'policy');
        assert(steps.length > 0 && steps[steps.length - 1].done, `episode not done after ${maxSteps} steps`);
        if (environment.turnMode === 'single') assert(steps.length === 1, 'a single-turn episode must be done after one step');
        const episode = inst.newEpisode();
        await episode.reset(await firstTask(inst), 11);
        for (const action of actions) await episode.step(action);
        await expectCode(() => episode.step('again'), 'ENV_STEP_AFTER_DONE');
        await episode.close();
      },
    },
    {
      name: 'refuses step before reset with a code; close is idempotent',
      run: async () => {
        const [, inst] = await get();
        const fresh = inst.newEpisode();
        await expectCode(() => fresh.step('hello'), 'ENV_NOT_RESET');
        await fresh.close();
        await fresh.close();
        const used = inst.newEpisode();
        await used.reset(await firstTask(inst), 3);
        await used.close();
        await used.close();
        await inst.close?.();
        await inst.close?.();
        instance = undefined;
      },
    },
  ];
}

/**
 * Registers the conformance checks as Jest (or any `describe`/`it` framework) tests.
 *
 * @example
 * ```ts
 * import { describeConformance } from '@opentinker/env-sdk/testing';
 * import env from './index';
 * describeConformance(env, { config: { difficulty: 2 }, policy: () => '\\boxed{4}' });
 * ```
 */
export function describeConformance(env: unknown, options: ConformanceOptions = {}): void {
  const g = globalThis as unknown as { describe: (n: string, f: () => void) => void; it: (n: string, f: () => Promise<void>, t?: number) => void };
  const id = isEnvironment(env) ? env.id : 'environment';
  g.describe(`${id} conforms to the OpenTinker environment contract`, () => {
    for (const check of conformanceChecks(env, options)) g.it(check.name, () => check.run(), 60_000);
  });
}

/**
 * A step's result checked as hosts check it (`parseStepAnswer`: the protocol's schemas, so the words are
 * the ones a host would use), then the stricter checks of this kit: an observation, `info` that survives
 * a JSON round trip unchanged and standard fields of the right types.
 */
function checkStep(result: StepResult, where: string): void {
  conforms(() => parseStepAnswer(result, where));
  assert(typeof result.observation === 'string', `${where}: observation must be a string`);
  assertJson(result.info, `${where}: info`);
  const problem = standardInfoProblem(result.info);
  assert(problem === null, `${where}: ${problem} (see StandardInfo)`);
}

async function expectCode(work: () => unknown, code: string): Promise<void> {
  try {
    await work();
  } catch (error) {
    assert(isEnvironmentError(error) && error.code === code, `expected ${code}, got ${(error as Error)?.message}`);
    return;
  }
  throw new Error(`expected an EnvironmentError ${code}, but the call succeeded`);
}

function assertJson(value: unknown, what: string): void {
  let copy: string;
  try {
    copy = JSON.stringify(value);
  } catch {
    throw new Error(`${what} is not JSON-serialisable`);
  }
  assert(copy !== undefined && JSON.stringify(JSON.parse(copy)) === copy, `${what} does not survive a JSON round trip`);
}

/** Runs a host's check; what it refuses fails the kit with the host's words. */
function conforms(check: () => unknown): void {
  try {
    check();
  } catch (error) {
    throw new Error(`Conformance: ${(error as Error).message}`);
  }
}

function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(`Conformance: ${message}`);
}
