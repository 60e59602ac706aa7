/**
 * Every `compute_value_loss` vector of `fixtures/verl/value_loss.json` (outputs of verl's own function):
 * `vf_loss`, `vf_clipfrac` and `d vf_loss / d vpreds` over the whole tensor.
 */
import type { LossAggMode } from '../aggregation';
import { expectClose, reportWorst } from '../testing/golden';
import { FIXTURE_FILES, loadVerlFixture, matrix, num, vectorCases, VERL_TOL } from '../testing/verl-vectors';
import { computeValueLoss } from './value-loss';

const fixture = loadVerlFixture('value_loss.json');

afterAll(reportWorst);

describe('compute_value_loss vs verl (fixtures/verl/value_loss.json)', () => {
  test('the fixture holds every vector', () => {
    expect(fixture.vectors).toHaveLength(FIXTURE_FILES['value_loss.json']);
    expect(fixture.count).toBe(fixture.vectors.length);
  });

  test.each(vectorCases(fixture))('%s', (_id, v) => {
    const a = v.args;
    const vpreds = matrix(a.vpreds);
    const r = computeValueLoss(
      {
        batch: vpreds.batch,
        seqLen: vpreds.seqLen,
        vpreds: vpreds.data,
        returns: matrix(a.returns).data,
        values: matrix(a.values).data,
        responseMask: matrix(a.response_mask).data,
      },
      a.cliprange_value,
      a.loss_agg_mode as LossAggMode,
    );
    expectClose(r.loss, num(v.outputs.vf_loss), VERL_TOL, `${v.id} vf_loss`, 'value loss');
    expectClose(r.vfClipfrac, num(v.outputs.vf_clipfrac), VERL_TOL, `${v.id} vf_clipfrac`, 'value loss');
    expectClose(r.dVpreds, matrix(v.grad!.d_vf_loss_d_vpreds).data, VERL_TOL, `${v.id} d_vf_loss_d_vpreds`, 'value loss grad');
  });
});
