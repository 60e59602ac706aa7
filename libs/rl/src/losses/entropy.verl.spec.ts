/**
 * Every entropy vector of `fixtures/verl/entropy.json` (outputs of verl's own functions):
 * `entropy_from_logits` with `d Σentropy / d logits` (uniform and ±30 near-one-hot rows included) and
 * `compute_entropy_loss` in each aggregation mode.
 */
import type { LossAggMode } from '../aggregation';
import { expectClose, reportWorst } from '../testing/golden';
import { FIXTURE_FILES, loadVerlFixture, matrix, num, tensor, vectorCases, VERL_TOL } from '../testing/verl-vectors';
import { computeEntropyLoss, entropyFromLogits, entropyGradLogits } from './entropy';

const fixture = loadVerlFixture('entropy.json');

afterAll(reportWorst);

describe('entropy vs verl (fixtures/verl/entropy.json)', () => {
  test('the fixture holds every vector', () => {
    expect(fixture.vectors).toHaveLength(FIXTURE_FILES['entropy.json']);
    expect(fixture.count).toBe(fixture.vectors.length);
  });

  test.each(vectorCases(fixture))('%s', (_id, v) => {
    const logits = tensor(v.args.logits);
    const [batch, seqLen, vocab] = logits.shape;
    if (v.function.endsWith('.entropy_from_logits')) {
      expectClose(entropyFromLogits(logits.data, batch * seqLen, vocab), matrix(v.outputs.entropy).data, VERL_TOL, `${v.id} entropy`, 'entropy');
      expectClose(entropyGradLogits(logits.data, batch * seqLen, vocab), tensor(v.grad!.d_sum_entropy_d_logits).data, VERL_TOL, `${v.id} grad`, 'entropy grad');
      return;
    }
    expect(v.function.endsWith('.compute_entropy_loss')).toBe(true);
    const r = computeEntropyLoss({ batch, seqLen, vocab, logits: logits.data, responseMask: matrix(v.args.response_mask).data }, v.args.loss_agg_mode as LossAggMode);
    expectClose(r.loss, num(v.outputs.entropy_loss), VERL_TOL, `${v.id} entropy_loss`, 'entropy loss');
  });
});
