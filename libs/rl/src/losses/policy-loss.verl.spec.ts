/**
 * Every policy-loss vector of `fixtures/verl/policy_losses.json` (outputs of verl's own functions): the
 * registered modes through the `loss_mode` registry under verl's name, `compute_policy_loss_reinforce`
 * directly and as `loss_mode: reinforce`. Checks the loss, the exact set of metric keys verl returns and
 * their values, and `d loss / d log_prob` from verl's autograd over the whole tensor.
 */
import type { LossAggMode } from '../aggregation';
import { expectClose, reportWorst } from '../testing/golden';
import { FIXTURE_FILES, loadVerlFixture, matrix, num, plainConfig, vectorCases, VERL_TOL, type VerlVector } from '../testing/verl-vectors';
import { computePolicyLossReinforce } from './reinforce';
import { computePolicyLoss } from './registry';
import type { ActorConfig, PolicyLossInput, PolicyLossOutput } from './types';

const fixture = loadVerlFixture('policy_losses.json');

function toInput(v: VerlVector): PolicyLossInput {
  const a = v.args;
  const lp = matrix(a.log_prob);
  return {
    batch: lp.batch,
    seqLen: lp.seqLen,
    oldLogProb: matrix(a.old_log_prob ?? a.rollout_log_prob).data,
    logProb: lp.data,
    advantages: matrix(a.advantages).data,
    responseMask: matrix(a.response_mask).data,
    ...(a.rollout_is_weights ? { rolloutIsWeights: matrix(a.rollout_is_weights).data } : {}),
  };
}

function check(out: PolicyLossOutput, v: VerlVector): void {
  expectClose(out.loss, num(v.outputs.pg_loss), VERL_TOL, `${v.id} pg_loss`, 'policy loss');
  const expected = v.outputs.pg_metrics as Record<string, number>;
  expect(Object.keys(out.metrics).sort()).toEqual(Object.keys(expected).sort());
  for (const [k, e] of Object.entries(expected)) {
    expectClose((out.metrics as Record<string, number>)[k], e, VERL_TOL, `${v.id} ${k}`, 'policy loss metrics');
  }
  expectClose(out.dLogProb, matrix(v.grad!.d_pg_loss_d_log_prob).data, VERL_TOL, `${v.id} d_pg_loss_d_log_prob`, 'policy loss grad');
}

afterAll(reportWorst);

describe('policy losses vs verl (fixtures/verl/policy_losses.json)', () => {
  test('the fixture holds every vector', () => {
    expect(fixture.vectors).toHaveLength(FIXTURE_FILES['policy_losses.json']);
    expect(fixture.count).toBe(fixture.vectors.length);
  });

  test.each(vectorCases(fixture))('%s', (_id, v) => {
    const config = plainConfig<ActorConfig>(v.args.config);
    const mode = v.args.loss_agg_mode as LossAggMode;
    if (v.function.endsWith('.compute_policy_loss_reinforce')) {
      check(computePolicyLossReinforce(toInput(v), mode, config), v);
      check(computePolicyLoss(toInput(v), { ...config, policy_loss: { ...config.policy_loss, loss_mode: 'reinforce' } }, mode), v);
      return;
    }
    expect(config.policy_loss?.loss_mode).toBe(v.registry_name);
    check(computePolicyLoss(toInput(v), config, mode), v);
  });
});
