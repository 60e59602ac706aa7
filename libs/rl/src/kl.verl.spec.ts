/**
 * Every `kl_penalty` vector of `fixtures/verl/kl_penalty.json` (outputs of verl's own function): the
 * per-token estimate and `d Σkl / d logprob` over the whole tensor, the names verl raises
 * `NotImplementedError` for (`full` and the `+` names), and the `apply_kl_penalty` composite with the
 * adaptive controller.
 */
import { isRlError } from './errors';
import { applyKlPenalty, klPenalty, klPenaltyGrad, type KlCtrlConfig } from './kl';
import { getKlController } from './kl-controller';
import { expectClose, reportWorst } from './testing/golden';
import { FIXTURE_FILES, loadVerlFixture, matrix, num, vectorCases, VERL_TOL } from './testing/verl-vectors';

const fixture = loadVerlFixture('kl_penalty.json');

afterAll(reportWorst);

describe('kl_penalty vs verl (fixtures/verl/kl_penalty.json)', () => {
  test('the fixture holds every vector', () => {
    expect(fixture.vectors).toHaveLength(FIXTURE_FILES['kl_penalty.json']);
    expect(fixture.count).toBe(fixture.vectors.length);
  });

  test.each(vectorCases(fixture))('%s', (_id, v) => {
    const a = v.args;
    if (v.function.startsWith('composite: ray_trainer.apply_kl_penalty')) {
      const scores = matrix(a.token_level_scores);
      const ctrl = getKlController(a.kl_ctrl as KlCtrlConfig);
      const beta = ctrl.value;
      const r = applyKlPenalty(
        {
          batch: scores.batch,
          seqLen: scores.seqLen,
          tokenLevelScores: scores.data,
          oldLogProb: matrix(a.old_log_probs).data,
          refLogProb: matrix(a.ref_log_prob).data,
          responseMask: matrix(a.response_mask).data,
        },
        beta,
        a.kl_penalty,
      );
      ctrl.update(r.currentKl, scores.batch);
      expectClose(r.tokenLevelRewards, matrix(v.outputs.token_level_rewards).data, VERL_TOL, `${v.id} token_level_rewards`, 'apply_kl_penalty');
      expectClose(r.currentKl, num(v.outputs.current_kl), VERL_TOL, `${v.id} current_kl`, 'apply_kl_penalty');
      expectClose(beta, num(v.outputs.beta_used), VERL_TOL, `${v.id} beta_used`, 'apply_kl_penalty');
      expectClose(ctrl.value, num(v.outputs.kl_coef_after_update), VERL_TOL, `${v.id} kl_coef_after_update`, 'apply_kl_penalty');
      return;
    }
    const lp = matrix(a.logprob).data;
    const ref = matrix(a.ref_logprob).data;
    if (v.outputs.raises !== undefined) {
      expect(v.outputs.raises).toBe('NotImplementedError');
      for (const f of [klPenalty, klPenaltyGrad]) {
        let caught: unknown;
        try {
          f(lp, ref, a.kl_penalty);
        } catch (e) {
          caught = e;
        }
        expect(isRlError(caught) && caught.code).toBe('RL_NOT_IMPLEMENTED');
      }
      return;
    }
    expectClose(klPenalty(lp, ref, a.kl_penalty), matrix(v.outputs.kl).data, VERL_TOL, `${v.id} kl`, 'kl_penalty');
    expectClose(klPenaltyGrad(lp, ref, a.kl_penalty), matrix(v.grad!.d_sum_kl_d_logprob).data, VERL_TOL, `${v.id} grad`, 'kl_penalty grad');
  });
});
