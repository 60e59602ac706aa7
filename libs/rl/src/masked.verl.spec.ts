/**
 * Every vector of `fixtures/verl/utils.json` (outputs of verl's own functions): the masked statistics of
 * `verl.utils.torch_functional` and `compute_rewards`.
 */
import { computeRewards } from './compute-rewards';
import { maskedMean, maskedMeanRows, maskedSum, maskedSumRows, maskedVar, maskedWhiten } from './masked';
import { expectClose, reportWorst } from './testing/golden';
import { FIXTURE_FILES, loadVerlFixture, matrix, num, tensor, vectorCases, VERL_TOL } from './testing/verl-vectors';

const fixture = loadVerlFixture('utils.json');

afterAll(reportWorst);

describe('masked statistics and compute_rewards vs verl (fixtures/verl/utils.json)', () => {
  test('the fixture holds every vector', () => {
    expect(fixture.vectors).toHaveLength(FIXTURE_FILES['utils.json']);
    expect(fixture.count).toBe(fixture.vectors.length);
  });

  test.each(vectorCases(fixture))('%s', (_id, v) => {
    const a = v.args;
    const o = v.outputs;
    if (v.function.endsWith('.compute_rewards')) {
      const out = computeRewards(matrix(a.token_level_scores).data, matrix(a.old_log_prob).data, matrix(a.ref_log_prob).data, a.kl_ratio);
      expectClose(out, matrix(o.rewards).data, VERL_TOL, `${v.id} rewards`, 'compute_rewards');
      return;
    }
    expect(v.function).toBe('verl.utils.torch_functional.masked_*');
    const x = matrix(a.values);
    const m = matrix(a.mask).data;
    expect(Object.keys(o).sort()).toEqual([
      'masked_mean_all',
      'masked_mean_axis_-1',
      'masked_sum_all',
      'masked_sum_axis_-1',
      'masked_var_biased',
      'masked_var_unbiased',
      'masked_whiten_shift_mean_false',
      'masked_whiten_shift_mean_true',
    ]);
    expectClose(maskedSum(x.data, m), num(o.masked_sum_all), VERL_TOL, `${v.id} masked_sum`, 'masked');
    expectClose(maskedSumRows(x.data, m, x.batch, x.seqLen), tensor(o['masked_sum_axis_-1']).data, VERL_TOL, `${v.id} masked_sum axis -1`, 'masked');
    expectClose(maskedMean(x.data, m), num(o.masked_mean_all), VERL_TOL, `${v.id} masked_mean`, 'masked');
    expectClose(maskedMeanRows(x.data, m, x.batch, x.seqLen), tensor(o['masked_mean_axis_-1']).data, VERL_TOL, `${v.id} masked_mean axis -1`, 'masked');
    expectClose(maskedVar(x.data, m), num(o.masked_var_unbiased), VERL_TOL, `${v.id} masked_var`, 'masked');
    expectClose(maskedVar(x.data, m, false), num(o.masked_var_biased), VERL_TOL, `${v.id} masked_var biased`, 'masked');
    expectClose(maskedWhiten(x.data, m), matrix(o.masked_whiten_shift_mean_true).data, VERL_TOL, `${v.id} masked_whiten`, 'masked');
    expectClose(maskedWhiten(x.data, m, false), matrix(o.masked_whiten_shift_mean_false).data, VERL_TOL, `${v.id} masked_whiten shift_mean=False`, 'masked');
  });
});
