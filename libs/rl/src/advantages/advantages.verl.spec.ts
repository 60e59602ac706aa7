/**
 * Every advantage-estimator vector of `fixtures/verl/advantages.json` (outputs of verl's own functions),
 * computed through the `adv_estimator` registry under verl's registry name and compared over the whole
 * tensor, padded positions included.
 */
import { expectClose, reportWorst } from '../testing/golden';
import { FIXTURE_FILES, GRPO_VECTORIZED_TOL, loadVerlFixture, matrix, plainConfig, tensor, vectorCases, VERL_TOL, type VerlVector } from '../testing/verl-vectors';
import { computeAdvantage, type AlgoConfig } from './registry';
import type { AdvantageInput } from './types';

const fixture = loadVerlFixture('advantages.json');

/** verl's keyword arguments as this package's input and `algorithm` config. */
function toCall(v: VerlVector): { input: AdvantageInput; config: AlgoConfig } {
  const a = v.args;
  const rewards = matrix(a.token_level_rewards);
  const { batch, seqLen } = rewards;
  const m = (k: string) => (a[k] == null ? undefined : matrix(a[k]).data);
  const input: AdvantageInput = {
    batch,
    seqLen,
    tokenLevelRewards: rewards.data,
    responseMask: matrix(a.response_mask).data,
    ...(a.index ? { index: a.index as number[] } : {}),
    ...(a.values ? { values: m('values') } : {}),
    ...(a.reward_baselines ? { rewardBaselines: tensor(a.reward_baselines).data } : {}),
    ...(a.old_log_probs ? { oldLogProbs: m('old_log_probs') } : {}),
    ...(a.sum_pi_squared ? { sumPiSquared: m('sum_pi_squared') } : {}),
    ...(a.rollout_is_weights ? { rolloutIsWeights: m('rollout_is_weights') } : {}),
  };
  const config: AlgoConfig = { adv_estimator: v.registry_name!, ...plainConfig<AlgoConfig>(a.config ?? {}) };
  // Keyword arguments verl's functions read (grpo_passk reads its flag from config only, as verl does).
  for (const k of ['gamma', 'lam', 'epsilon', 'f_norm', 'handle_zero_tail'] as const) if (a[k] !== undefined) config[k] = a[k];
  if (a.norm_adv_by_std_in_grpo !== undefined && v.registry_name !== 'grpo_passk') config.norm_adv_by_std_in_grpo = a.norm_adv_by_std_in_grpo;
  return { input, config };
}

afterAll(reportWorst);

describe('advantage estimators vs verl (fixtures/verl/advantages.json)', () => {
  test('the fixture holds every vector', () => {
    expect(fixture.vectors).toHaveLength(FIXTURE_FILES['advantages.json']);
    expect(fixture.count).toBe(fixture.vectors.length);
  });

  test.each(vectorCases(fixture))('%s', (_id, v) => {
    const { input, config } = toCall(v);
    const out = computeAdvantage(input, config);
    const tol = v.registry_name === 'grpo_vectorized' ? GRPO_VECTORIZED_TOL : VERL_TOL;
    const bucket = v.registry_name === 'grpo_vectorized' ? 'grpo_vectorized' : 'advantages';
    expectClose(out.advantages, tensor(v.outputs.advantages).data, tol, `${v.id} advantages`, bucket);
    expectClose(out.returns, tensor(v.outputs.returns).data, tol, `${v.id} returns`, bucket);
  });
});
