#!/usr/bin/env node
'use strict';
/**
 * Proof that the engine learns (issue 4, section 3; docs/design.md section 4): the tiny-char preset on
 * addition of 1–3 digit numbers. SFT on a small fixed set overfits; GRPO on fresh prompts checked by the
 * answer verifier keeps improving held-out accuracy. Prints loss / reward / accuracy per step and a
 * before/after summary; writes JSON to bench/results/learn-<date>.json. Asserts nothing (a benchmark).
 *
 * Run after building:  npx tsc -b libs/engine/tsconfig.json libs/rl/tsconfig.json && node libs/engine/bench/learn.bench.js
 * Options: --sft-steps N  --grpo-steps N  --seed N  --sft-lr X (3e-4)  --sft-warmup N (20)  --sft-schedule constant|cosine
 * (constant)  --sft-batch N (32)  --grpo-lr X (1e-4)  --quick (a tiny smoke run)  --no-filter (keep zero-variance groups)
 */
const fs = require('node:fs');
const path = require('node:path');
const os = require('node:os');
const eng = require('@opentinker/engine');
const rl = require('@opentinker/rl');

function parseArgs(argv) {
  const opts = { sftSteps: 1400, grpoSteps: 250, seed: 1, quick: false, filter: true, sftLr: 3e-4, sftWarmup: 20, sftSchedule: 'constant', sftBatch: 32, grpoLr: 1e-4 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const num = () => {
      const v = Number(argv[++i]);
      if (!Number.isFinite(v)) throw new Error(`${a} needs a number`);
      return v;
    };
    if (a === '--sft-steps') opts.sftSteps = num();
    else if (a === '--grpo-steps') opts.grpoSteps = num();
    else if (a === '--seed') opts.seed = num();
    else if (a === '--sft-lr') opts.sftLr = num();
    else if (a === '--sft-warmup') opts.sftWarmup = num();
    else if (a === '--sft-batch') opts.sftBatch = num();
    else if (a === '--sft-schedule') {
      opts.sftSchedule = argv[++i];
      if (opts.sftSchedule !== 'constant' && opts.sftSchedule !== 'cosine') throw new Error('--sft-schedule is constant or cosine');
    } else if (a === '--grpo-lr') opts.grpoLr = num();
    else if (a === '--quick') opts.quick = true;
    else if (a === '--no-filter') opts.filter = false;
    else throw new Error(`unknown option ${a}`);
  }
  if (opts.quick) {
    if (!argv.includes('--sft-steps')) opts.sftSteps = 10;
    if (!argv.includes('--grpo-steps')) opts.grpoSteps = 3;
  }
  return opts;
}

const opts = parseArgs(process.argv.slice(2));
const CFG = {
  trainSize: 2000,
  heldOutSize: opts.quick ? 40 : 200,
  sftBatch: opts.sftBatch,
  sftLr: opts.sftLr,
  sftWarmup: opts.sftWarmup,
  sftSchedule: opts.sftSchedule,
  evalEvery: opts.quick ? 5 : 100,
  grpoPrompts: opts.quick ? 4 : 32,
  rolloutN: 8,
  grpoLr: opts.grpoLr,
  grpoEvalEvery: opts.quick ? 3 : 20,
  maxNewTokens: 6,
};

const SPECIAL = eng.TINY_CHAR_SPECIAL_TOKENS;
const BOS = SPECIAL['<|endoftext|>'];
const EOS = SPECIAL['<|im_end|>'];
const tok = new eng.ByteTokenizer();

// Operands: digit count uniform in 1..3, then uniform within it, so short sums are not swamped.
function randomProblem(rng) {
  const operand = () => {
    const digits = 1 + Math.floor(rng.uniform() * 3);
    const lo = digits === 1 ? 0 : 10 ** (digits - 1);
    return lo + Math.floor(rng.uniform() * (10 ** digits - lo));
  };
  const a = operand();
  const b = operand();
  return { a, b, key: `${a}+${b}`, answer: String(a + b) };
}

const promptIds = (p) => [BOS, ...tok.encode(`${p.a}+${p.b}=`)];
const answerIds = (p) => [...tok.encode(p.answer), EOS];

/** The verifier: the sampled text up to the stop token (or a newline) must equal the sum. */
function isCorrect(p, tokens) {
  const cut = tokens.indexOf(EOS);
  const text = tok
    .decode(cut >= 0 ? tokens.slice(0, cut) : tokens, { skipSpecial: true })
    .split('\n')[0]
    .trim();
  return text === p.answer;
}

function heldOutAccuracy(model, problems) {
  let right = 0;
  for (let i = 0; i < problems.length; i += 100) {
    const chunk = problems.slice(i, i + 100);
    const outs = eng.sample(model, chunk.map(promptIds), { maxNewTokens: CFG.maxNewTokens, temperature: 0, stopTokenIds: [EOS] });
    outs.forEach((o, j) => (right += isCorrect(chunk[j], o.tokens) ? 1 : 0));
  }
  return right / problems.length;
}

function sftBatch(problems) {
  const seqs = problems.map((p) => [...promptIds(p), ...answerIds(p)]);
  const batch = eng.padBatch(seqs, { padId: SPECIAL['<|pad|>'] });
  // Loss only on the answer and its stop token (token-aligned: position t holds log p(ids[t] | ids[<t])).
  const lossMask = new Float32Array(batch.batchSize * batch.seqLen);
  problems.forEach((p, b) => {
    const start = promptIds(p).length;
    const end = start + answerIds(p).length;
    for (let t = start; t < end; t++) lossMask[b * batch.seqLen + t] = 1;
  });
  return { batch, lossMask };
}

const secs = (t0) => Number(process.hrtime.bigint() - t0) / 1e9;

(async () => {
  const backend = await eng.initBackend({ backend: 'wasm' });
  const rng = new eng.Prng(opts.seed);
  const model = eng.Model.init(eng.modelPreset('tiny-char'), opts.seed);
  const params = [...model.namedVariables().values()].reduce((n, v) => n + v.size, 0);

  const train = [];
  const seen = new Set();
  while (train.length < CFG.trainSize) {
    const p = randomProblem(rng);
    if (seen.has(p.key)) continue;
    seen.add(p.key);
    train.push(p);
  }
  const heldOut = [];
  while (heldOut.length < CFG.heldOutSize) {
    const p = randomProblem(rng);
    if (seen.has(p.key)) continue;
    seen.add(p.key);
    heldOut.push(p);
  }
  const trainProbe = train.slice(0, CFG.heldOutSize);

  console.log(
    `tiny-char (${params.toLocaleString()} params) on ${backend.name}; seed ${opts.seed}; load ${os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
  );
  console.log(
    `SFT: ${CFG.trainSize} fixed problems, batch ${CFG.sftBatch}, lr ${CFG.sftLr} (${CFG.sftWarmup} warm-up steps, then ${CFG.sftSchedule}), ` +
      `${opts.sftSteps} steps; held-out ${heldOut.length}`,
  );

  const result = {
    date: new Date().toISOString(),
    backend: backend.name,
    model: 'tiny-char',
    params,
    seed: opts.seed,
    options: { ...opts },
    config: CFG,
    loadAvgStart: os.loadavg(),
    cpus: os.cpus().length,
    sft: { log: [] },
    grpo: { log: [], evals: [] },
  };

  // ---- SFT ----
  // Linear ramp over the warm-up (the first step at lr/warmup), then constant or cosine decay to 0.
  const sftLrAt = (s) => {
    const ramp = CFG.sftWarmup > 0 ? Math.min(1, (s + 1) / CFG.sftWarmup) : 1;
    if (CFG.sftSchedule !== 'cosine' || s < CFG.sftWarmup) return CFG.sftLr * ramp;
    const progress = Math.min(1, (s - CFG.sftWarmup) / Math.max(1, opts.sftSteps - CFG.sftWarmup));
    return CFG.sftLr * 0.5 * (1 + Math.cos(Math.PI * progress));
  };
  const sft = new eng.Trainer(model, { lr: sftLrAt, maxGradNorm: 1, weightDecay: 0.01 });
  const tSft = process.hrtime.bigint();
  let order = [];
  let lossSum = 0;
  let lossN = 0;
  for (let step = 1; step <= opts.sftSteps; step++) {
    if (order.length < CFG.sftBatch) {
      order = train.map((_, i) => i);
      for (let i = order.length - 1; i > 0; i--) {
        const j = Math.floor(rng.uniform() * (i + 1));
        [order[i], order[j]] = [order[j], order[i]];
      }
    }
    const { batch, lossMask } = sftBatch(order.splice(0, CFG.sftBatch).map((i) => train[i]));
    const r = sft.trainStep(batch, eng.crossEntropyCoefficients(batch, lossMask));
    lossSum += r.loss;
    lossN++;
    if (step % CFG.evalEvery === 0 || step === opts.sftSteps) {
      const acc = heldOutAccuracy(model, heldOut);
      const trainAcc = heldOutAccuracy(model, trainProbe);
      const row = { step, loss: lossSum / lossN, heldOut: acc, train: trainAcc, seconds: secs(tSft) };
      result.sft.log.push(row);
      console.log(
        `sft ${String(step).padStart(5)}  loss ${row.loss.toFixed(4)}  train acc ${(trainAcc * 100).toFixed(1)}%  held-out acc ${(acc * 100).toFixed(1)}%  ${row.seconds.toFixed(1)} s`,
      );
      lossSum = 0;
      lossN = 0;
    }
  }
  sft.dispose();
  result.sft.seconds = secs(tSft);
  const accAfterSft = result.sft.log.length ? result.sft.log[result.sft.log.length - 1].heldOut : heldOutAccuracy(model, heldOut);
  result.sft.heldOut = accAfterSft;

  // ---- GRPO ----
  const algo = { adv_estimator: 'grpo', norm_adv_by_std_in_grpo: true };
  const actor = { clip_ratio: 0.2, loss_agg_mode: 'token-mean', policy_loss: { loss_mode: 'vanilla' } };
  const advFn = rl.getAdvEstimatorFn(algo.adv_estimator);
  const lossFn = rl.getPolicyLossFn(actor.policy_loss.loss_mode);
  console.log(
    `GRPO: ${CFG.grpoPrompts} fresh prompts × ${CFG.rolloutN} at temperature 1, clip 0.2, token-mean, no KL, lr ${CFG.grpoLr}, ` +
      `one update per batch, ${opts.filter ? 'zero-variance groups dropped' : 'all groups kept'}, ${opts.grpoSteps} steps`,
  );
  const grpo = new eng.Trainer(model, { lr: CFG.grpoLr, maxGradNorm: 1, weightDecay: 0 });
  const tGrpo = process.hrtime.bigint();
  let sampleSecs = 0;
  let trainSecs = 0;
  for (let step = 1; step <= opts.grpoSteps; step++) {
    const problems = [];
    while (problems.length < CFG.grpoPrompts) {
      const p = randomProblem(rng);
      if (!seen.has(p.key)) problems.push(p); // never a held-out (or SFT) problem
    }
    const prompts = [];
    const rows = [];
    problems.forEach((p, g) => {
      for (let k = 0; k < CFG.rolloutN; k++) {
        prompts.push(promptIds(p));
        rows.push({ p, g });
      }
    });
    let t0 = process.hrtime.bigint();
    const outs = eng.sample(model, prompts, { maxNewTokens: CFG.maxNewTokens, temperature: 1, topP: 1, seed: opts.seed * 100003 + step, stopTokenIds: [EOS] });
    sampleSecs += secs(t0);
    const rewards = outs.map((o, i) => (isCorrect(rows[i].p, o.tokens) ? 1 : 0));
    const uids = rows.map((r) => r.g);
    const rewardMean = rewards.reduce((a, b) => a + b, 0) / rewards.length;
    const { keptIndices, keptUids } = rl.filterGroupsByMetricStd(uids, rewards);
    const mixed = keptUids.length / CFG.grpoPrompts;
    const keep = opts.filter ? keptIndices : rows.map((_, i) => i);
    const row = { step, rewardMean, mixedGroups: mixed, rowsTrained: keep.length };
    if (keep.length > 0) {
      t0 = process.hrtime.bigint();
      const seqs = keep.map((i) => [...prompts[i], ...outs[i].tokens]);
      const batch = eng.padBatch(seqs, { padId: SPECIAL['<|pad|>'] });
      const B = batch.batchSize;
      const T = batch.seqLen;
      const responseMask = new Float64Array(B * T);
      const oldLogProb = new Float64Array(B * T);
      const tokenLevelRewards = new Float64Array(B * T);
      keep.forEach((i, b) => {
        const start = prompts[i].length;
        const n = outs[i].tokens.length;
        for (let j = 0; j < n; j++) {
          responseMask[b * T + start + j] = 1;
          oldLogProb[b * T + start + j] = outs[i].logProbs[j];
        }
        if (n > 0) tokenLevelRewards[b * T + start + n - 1] = rewards[i];
      });
      const { advantages } = advFn({ batch: B, seqLen: T, tokenLevelRewards, responseMask, index: keep.map((i) => uids[i]) }, algo);
      let metrics;
      const r = grpo.trainStep(batch, ({ logProbs }) => {
        const out = lossFn({ batch: B, seqLen: T, oldLogProb, logProb: logProbs, advantages, responseMask }, actor.loss_agg_mode, actor);
        metrics = { loss: out.loss, ...out.metrics };
        return { logProbCoef: out.dLogProb };
      });
      trainSecs += secs(t0);
      Object.assign(row, { pgLoss: metrics.loss, ppoKl: metrics['actor/ppo_kl'], clipfrac: metrics['actor/pg_clipfrac'], gradNorm: r.gradNorm });
    }
    row.seconds = secs(tGrpo);
    let line = `grpo ${String(step).padStart(4)}  reward ${rewardMean.toFixed(3)}  mixed groups ${(mixed * 100).toFixed(0).padStart(3)}%  rows ${String(keep.length).padStart(3)}`;
    if (step % CFG.grpoEvalEvery === 0 || step === opts.grpoSteps) {
      row.heldOut = heldOutAccuracy(model, heldOut);
      result.grpo.evals.push({ step, heldOut: row.heldOut, seconds: secs(tGrpo) });
      line += `  held-out acc ${(row.heldOut * 100).toFixed(1)}%`;
    }
    result.grpo.log.push(row);
    console.log(`${line}  ${row.seconds.toFixed(1)} s`);
  }
  grpo.dispose();
  result.grpo.seconds = secs(tGrpo);
  result.grpo.sampleSeconds = sampleSecs;
  result.grpo.trainSeconds = trainSecs;
  const accAfterGrpo = result.grpo.evals.length ? result.grpo.evals[result.grpo.evals.length - 1].heldOut : accAfterSft;
  result.grpo.heldOut = accAfterGrpo;
  result.loadAvgEnd = os.loadavg();

  console.log('');
  console.log(`SFT  ${opts.sftSteps} steps, ${result.sft.seconds.toFixed(0)} s: held-out accuracy ${(accAfterSft * 100).toFixed(1)}%`);
  console.log(
    `GRPO ${opts.grpoSteps} steps, ${result.grpo.seconds.toFixed(0)} s (sampling ${sampleSecs.toFixed(0)} s, training ${trainSecs.toFixed(0)} s): ` +
      `held-out accuracy ${(accAfterSft * 100).toFixed(1)}% → ${(accAfterGrpo * 100).toFixed(1)}%`,
  );
  console.log(
    `load average at end: ${os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
  );

  if (!opts.quick) {
    const dir = path.join(__dirname, 'results');
    fs.mkdirSync(dir, { recursive: true });
    const file = path.join(dir, `learn-${result.date.slice(0, 10)}${opts.seed === 1 ? '' : `-seed${opts.seed}`}.json`);
    fs.writeFileSync(file, JSON.stringify(result, null, 2) + '\n');
    console.log(`wrote ${path.relative(process.cwd(), file)}`);
  }
  model.dispose();
})().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
