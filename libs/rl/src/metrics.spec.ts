import { computeDataMetrics } from './metrics';
import { filterGroupsByMetricStd } from './dynamic-sampling';
import { overlongPenalty } from './overlong-reward';
import { expectClose, F64, loadGolden, reportWorst } from './testing/golden';

const metricCases = loadGolden<Array<{ name: string; batch: number; seqLen: number; inputs: any; expected: Record<string, number> }>>('metrics.json');
const dapo = loadGolden<{ filter: { uids: string[]; metric: number[]; keptUids: string[]; keptIndices: number[] }; overlong: any[] }>('dapo.json');
afterAll(reportWorst);

describe('compute_data_metrics vs verl reference', () => {
  test.each(metricCases.map((c) => [c.name, c] as const))('%s', (_n, c) => {
    const m = computeDataMetrics({ batch: c.batch, seqLen: c.seqLen, ...c.inputs });
    expect(Object.keys(m).sort()).toEqual(Object.keys(c.expected).sort());
    for (const [k, v] of Object.entries(c.expected)) expectClose(m[k], v, F64, `${c.name} ${k}`, 'metrics');
  });

  test('empty batch selections give 0, not NaN', () => {
    const m = computeDataMetrics({ batch: 1, seqLen: 2, tokenLevelScores: [0, 0], tokenLevelRewards: [0, 0], advantages: [0, 0], returns: [0, 0], responseMask: [0, 0] });
    for (const v of Object.values(m)) expect(Number.isFinite(v)).toBe(true);
    expect(m['response/aborted_ratio']).toBe(1);
  });
});

describe('DAPO utilities vs verl reference', () => {
  test('dynamic sampling keeps groups with reward variance (and singletons)', () => {
    const r = filterGroupsByMetricStd(dapo.filter.uids, dapo.filter.metric);
    expect(r.keptUids).toEqual(dapo.filter.keptUids);
    expect(r.keptIndices).toEqual(dapo.filter.keptIndices);
  });

  test.each(dapo.overlong.map((c) => [c.length, c.bufferLen, c] as const))('overlong penalty length=%s buffer=%s', (_l, _b, c) => {
    expectClose(overlongPenalty(c.length, { maxRespLen: c.maxRespLen, bufferLen: c.bufferLen, penaltyFactor: c.penaltyFactor }), c.expected, F64, 'overlong', 'dapo');
  });
});
