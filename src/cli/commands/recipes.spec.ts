import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseConfig } from '@opentinker/env-sdk';
import type { Environment } from '@opentinker/env-sdk';
import { parseJobSpec } from '../../kinds/job-kinds';
import { loadRegistry } from '../../registry/registry-loader';
import { readJobSpec } from './job-spec-file';
import { FULL_SIZE, QUICK_SIZE, quickstartInferenceSpec, quickstartTrainSpec } from './quickstart-spec';

// Jest runs from the repository root.
const RECIPES = join(process.cwd(), 'recipes');
// The built-in environments as the server finds them: by their package marker, never by an import.
let ENVIRONMENTS: Record<string, Environment<unknown, unknown>> = {};
beforeAll(async () => {
  const records = await loadRegistry({ hostRoot: process.cwd(), pluginsDir: join(RECIPES, 'no-plugins') });
  ENVIRONMENTS = Object.fromEntries(records.filter((r) => r.environment && r.id).map((r) => [r.id, r.environment]));
  expect(Object.keys(ENVIRONMENTS).sort()).toEqual(['gomoku', 'math', 'math-tool']);
});

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
