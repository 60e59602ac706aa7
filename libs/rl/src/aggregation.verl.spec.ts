/**
 * Every `agg_loss` vector of `fixtures/verl/agg_loss.json` (outputs of verl's own function): the four
 * modes with and without verl's global-batch arguments, prefix / random / full masks and empty rows.
 */
import { aggLoss, type AggOptions, type LossAggMode } from './aggregation';
import { expectClose, reportWorst } from './testing/golden';
import { FIXTURE_FILES, loadVerlFixture, matrix, num, vectorCases, VERL_TOL } from './testing/verl-vectors';

const fixture = loadVerlFixture('agg_loss.json');

afterAll(reportWorst);

describe('agg_loss vs verl (fixtures/verl/agg_loss.json)', () => {
  test('the fixture holds every vector', () => {
    expect(fixture.vectors).toHaveLength(FIXTURE_FILES['agg_loss.json']);
    expect(fixture.count).toBe(fixture.vectors.length);
  });

  test.each(vectorCases(fixture))('%s', (_id, v) => {
    const a = v.args;
    const mat = matrix(a.loss_mat);
    const options: AggOptions = {
      ...(a.dp_size != null ? { dpSize: a.dp_size } : {}),
      ...(a.batch_num_tokens != null ? { batchNumTokens: a.batch_num_tokens } : {}),
      ...(a.global_batch_size != null ? { globalBatchSize: a.global_batch_size } : {}),
      ...(a.loss_scale_factor != null ? { lossScaleFactor: a.loss_scale_factor } : {}),
    };
    const { loss, weights } = aggLoss(mat.data, matrix(a.loss_mask).data, mat, a.loss_agg_mode as LossAggMode, options);
    expectClose(loss, num(v.outputs.loss), VERL_TOL, `${v.id} loss`, 'agg_loss');
    // The weights are the gradient of the (linear) aggregation: zero wherever the mask is.
    const mask = matrix(a.loss_mask).data;
    for (let k = 0; k < mask.length; k++) if (mask[k] === 0) expect(weights[k]).toBe(0);
  });
});
