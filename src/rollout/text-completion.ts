import { promptLogprobs } from '@opentinker/engine';
import type { Policy } from './policy';
import { GenerationError, sampleChoices, tokenEntry } from './generation';
import type { DeltaSink } from './generation';
import type { CompletionChoice, CompletionRequest, CompletionResult, GeneratedChoice, PromptTokenLogprob } from './sampling-schemas';

/**
 * Answers a completion request: each prompt as it is (no chat template), `n` choices each, sampled as
 * chat choices are ({@link sampleChoices}). With `echo` and `stream`, a choice's first delta is its
 * prompt. Errors name the request's field (`prompt`, `max_tokens`).
 */
export function generateCompletion(policy: Policy, req: CompletionRequest, onDelta?: DeltaSink): CompletionResult {
  const { tokenizer } = policy;
  const vocab = policy.config.vocab_size;
  const prompts = req.prompts.map((p, i) => {
    const field = req.prompts.length > 1 ? `prompt.${i}` : 'prompt';
    const ids = 'text' in p ? tokenizer.encode(p.text, { addSpecialTokens: true }) : p.ids;
    if (ids.length === 0) throw new GenerationError('invalid', `${field} has no tokens`, field);
    const bad = ids.findIndex((id) => !Number.isInteger(id) || id < 0 || id >= vocab);
    if (bad !== -1) throw new GenerationError('invalid', `${field}: token ${bad} = ${ids[bad]} is outside this model's vocabulary [0, ${vocab})`, field);
    if (ids.length + req.maxTokens > policy.contextLength) {
      throw new GenerationError(
        'context_length',
        `This model's maximum context length is ${policy.contextLength} tokens, however you requested ${ids.length + req.maxTokens} tokens ` +
          `(${ids.length} in your prompt; ${req.maxTokens} for the completion). Please reduce your prompt; or completion length.`,
        req.maxTokens > 0 ? 'max_tokens' : field,
      );
    }
    return { ids, text: 'text' in p ? p.text : tokenizer.decode(p.ids) };
  });
  const streaming = req.stream && onDelta !== undefined;
  const choices: CompletionChoice[] = [];
  prompts.forEach((prompt, p) => {
    const base = p * req.n;
    const echo = req.echo ? { text: prompt.text, logprobs: req.logprobs ? scorePrompt(policy, prompt.ids, req.topLogprobs ?? 0) : null } : null;
    if (streaming && echo) for (let j = 0; j < req.n; j++) onDelta!(base + j, echo.text, null);
    const sampled: GeneratedChoice[] =
      req.maxTokens === 0
        ? Array.from({ length: req.n }, () => ({ text: '', finishReason: 'length' as const, completionTokens: 0, logprobs: req.logprobs ? [] : null }))
        : sampleChoices(policy, prompt.ids, { ...req, maxTokens: req.maxTokens, seed: (req.seed + p) >>> 0 }, onDelta, base);
    for (const c of sampled) choices.push({ ...c, echo });
  });
  return { promptTokens: prompts.reduce((a, p) => a + p.ids.length, 0), choices };
}

function scorePrompt(policy: Policy, ids: readonly number[], top: number): PromptTokenLogprob[] {
  const { tokenizer } = policy;
  const scored = promptLogprobs(policy.model, ids, top, tokenizer.vocabSize);
  return ids.map((id, t) => {
    const lp = scored.logProbs[t];
    const alternatives = scored.top[t];
    return {
      ...tokenEntry(tokenizer, id, lp ?? 0),
      logprob: lp,
      top: alternatives === null ? null : alternatives.map((a) => tokenEntry(tokenizer, a.id, a.logProb)),
    };
  });
}
