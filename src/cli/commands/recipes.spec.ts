import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseConfig } from '@opentinker/env-sdk';
import type { Environment } from '@opentinker/env-sdk';
import gomoku from '../../../environments/gomoku/src/index';
import mathTool from '../../../environments/math-tool/src/index';
import math from '../../../environments/math/src/index';
import { parseJobSpec } from '../../jobs/kinds/job-kinds';
import { readJobSpec } from './job-spec-file';
import { FULL_SIZE, QUICK_SIZE, quickstartInferenceSpec, quickstartTrainSpec } from './quickstart-spec';

// Jest runs from the repository root.
const RECIPES = join(process.cwd(), 'recipes');
const ENVIRONMENTS: Record<string, Environment<unknown, unknown>> = { gomoku, math, 'math-tool': mathTool } as never;

/** A job spec must pass the server's schema and its environment config the environment's own schema. */
function checkSpec(raw: Record<string, unknown>) {
  const { spec } = parseJobSpec(raw);
  const environment = spec.environment as { id: string; config: unknown };
  const env = ENVIRONMENTS[environment.id];
  expect(env).toBeDefined();
  expect(() => parseConfig(env, environment.config)).not.toThrow();
  return spec;
}

describe('recipes/*.yaml', () => {
  const files = readdirSync(RECIPES).filter((f) => /\.(ya?ml|json)$/.test(f));

  it('has the gomoku and math-tool recipes', () => {
    expect(files).toEqual(expect.arrayContaining(['gomoku-grpo.yaml', 'math-tool-grpo.yaml']));
  });

  it.each(files)('%s is a valid job spec with a valid environment config', async (file) => {
    const spec = checkSpec(await readJobSpec(join(RECIPES, file)));
    expect(spec.kind).toBe('train');
  });
});

describe('the quickstart jobs', () => {
  it.each([
    ['full', FULL_SIZE],
    ['quick', QUICK_SIZE],
  ] as const)('%s: the train and inference specs are valid', (_, size) => {
    const train = checkSpec(quickstartTrainSpec(size));
    expect(train).toMatchObject({ sft: { steps: size.sftSteps, examples: size.sftExamples }, total_steps: size.rlSteps, algorithm: { filter_groups: true } });
    const infer = checkSpec(quickstartInferenceSpec(size, 'job:0b6f6d5e-1c2a-4d3b-9e8f-0123456789ab/step-0', 'SFT only'));
    expect(infer).toMatchObject({ split: 'test', num_tasks: size.evalTasks, rollout: { temperature: 0 } });
    // Both jobs see the same held-out problems.
    expect(infer.environment).toEqual(train.environment);
  });
});
