#!/usr/bin/env node
'use strict';
/**
 * Cost of the agent loop over bare sampling: the same single-turn math episodes (tiny-char, bare
 * equations, greedy-free sampling at temperature 1) played two ways:
 * - engine: render the prompts, one `sample()` per batch, grade the decoded answers with the episode;
 * - agent loop: `runEpisodes` (episodes, concurrent environment calls with timeouts, masks, log-probs).
 * Prints seconds per batch both ways and the overhead. `npm run build` first.
 *
 *   node test/bench/agent-loop.bench.js [--batches 10] [--batch 64] [--tokens 8]
 */
const { join } = require('node:path');
const { tmpdir } = require('node:os');

const root = join(__dirname, '..', '..');
const dist = (p) => require(join(root, 'dist', p));

function options(argv) {
  const o = { batches: 10, batch: 64, tokens: 8 };
  for (let i = 0; i < argv.length; i += 2) {
    const key = { '--batches': 'batches', '--batch': 'batch', '--tokens': 'tokens' }[argv[i]];
    if (!key) throw new Error(`unknown option ${argv[i]}`);
    o[key] = Number(argv[i + 1]);
  }
  return o;
}

async function main() {
  const o = options(process.argv.slice(2));
  const { sample } = require('@opentinker/engine');
  const { loadPolicy } = dist('rollout/policy.js');
  const { runEpisodes } = dist('rollout/agent-loop.js');
  const { openEnvironment } = dist('rollout/environment-handle.js');
  const { environmentSpec, modelSpec, rolloutSpec } = dist('rollout/rl-spec.js');
  const home = tmpdir();
  const paths = { hostRoot: root, pluginsDir: join(root, 'plugins'), home, jobsDir: join(home, 'jobs'), datasetsDir: join(home, 'datasets') };
  const log = () => undefined;
  const policy = await loadPolicy(modelSpec.parse({ preset: 'tiny-char', chat_template: 'plain' }), { paths, log });
  const handle = await openEnvironment(environmentSpec.parse({ id: 'math', config: { style: 'equation', difficulty: 3 } }), {
    paths,
    workDir: join(home, 'agent-loop-bench'),
    log,
  });
  const rollout = rolloutSpec.parse({ max_new_tokens: o.tokens });
  const tasks = async (b) => Promise.all(Array.from({ length: o.batch }, (_, i) => handle.env.tasks.get('train', b * o.batch + i)));

  const engine = async (b) => {
    const ts = await tasks(b);
    const episodes = ts.map(() => handle.env.newEpisode());
    const prompts = await Promise.all(episodes.map(async (e, i) => policy.renderPrompt(await e.reset(ts[i], 1))));
    const outs = sample(policy.model, prompts, { maxNewTokens: o.tokens, temperature: 1, seed: b, stopTokenIds: policy.stopTokenIds });
    await Promise.all(episodes.map((e, i) => e.step(policy.tokenizer.decode(outs[i].tokens, { skipSpecial: true }))));
    await Promise.all(episodes.map((e) => e.close()));
    return outs.reduce((n, s) => n + s.tokens.length, 0);
  };
  const loop = async (b) => {
    const ts = await tasks(b);
    const items = ts.map((task, i) => ({ taskIndex: b * o.batch + i, group: i, sample: 0, task }));
    const out = await runEpisodes(policy, handle.env, items, { rollout, seed: b });
    return out.reduce((n, t) => n + t.generatedTokens, 0);
  };

  const time = async (fn) => {
    await fn(0); // warm-up
    let tokens = 0;
    const started = process.hrtime.bigint();
    for (let b = 1; b <= o.batches; b++) tokens += await fn(b);
    return { seconds: Number(process.hrtime.bigint() - started) / 1e9 / o.batches, tokens: tokens / o.batches };
  };
  // Interleave twice so machine noise hits both sides alike.
  const e1 = await time(engine);
  const l1 = await time(loop);
  const e2 = await time(engine);
  const l2 = await time(loop);
  const e = (e1.seconds + e2.seconds) / 2;
  const l = (l1.seconds + l2.seconds) / 2;
  console.log(`batch ${o.batch} × ${o.tokens} tokens, ${o.batches} batches each way (twice, interleaved)`);
  console.log(`engine:     ${e.toFixed(3)} s/batch (${e1.tokens.toFixed(0)} tokens)`);
  console.log(`agent loop: ${l.toFixed(3)} s/batch (${l1.tokens.toFixed(0)} tokens)`);
  console.log(`overhead:   ${(((l - e) / e) * 100).toFixed(1)} %`);
  policy.dispose();
  await handle.close();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
