import { sample, StopStringScanner, unicodeToByte } from '@opentinker/engine';
import type { TokenAlternative, Tokenizer } from '@opentinker/engine';
import type { Policy } from './policy';
import type { GeneratedChoice, GenerateErrorKind, GenerateRequest, GenerateResult, SampleRequest, TokenAlternativeLogprob, TokenLogprob } from './sampling-schemas';

/** A request the model cannot serve as asked; `kind` says whose fault it is. */
export class GenerationError extends Error {
  constructor(
    readonly kind: GenerateErrorKind,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

/** Receives text as it becomes final, per choice. */
export type DeltaSink = (index: number, text: string, logprobs: TokenLogprob[] | null) => void;

const encoder = new TextEncoder();

/** The token's bytes: byte-level vocabularies spell them one character per byte; others via UTF-8 of the text. */
function tokenBytes(tokenizer: Tokenizer, id: number, text: string): number[] {
  const raw = tokenizer.tokenToString(id);
  const bytes: number[] = [];
  for (const ch of raw) {
    const b = unicodeToByte(ch);
    if (b === undefined) return [...encoder.encode(text)];
    bytes.push(b);
  }
  return bytes;
}

/** A token id as OpenAI names it: its text, its log-prob, its bytes. */
export function tokenEntry(tokenizer: Tokenizer, id: number, logprob: number): TokenAlternativeLogprob {
  const token = tokenizer.decode([id]);
  return { token, logprob, bytes: tokenBytes(tokenizer, id, token) };
}

function logprobEntries(tokenizer: Tokenizer, ids: readonly number[], logProbs: readonly number[], top: readonly TokenAlternative[][] | undefined, count: number): TokenLogprob[] {
  const out: TokenLogprob[] = [];
  for (let i = 0; i < count; i++) {
    out.push({ ...tokenEntry(tokenizer, ids[i], logProbs[i]), top: (top?.[i] ?? []).map((a) => tokenEntry(tokenizer, a.id, a.logProb)) });
  }
  return out;
}

/** Length of the longest end of `text` that starts some stop string (text that may yet become one). */
function pendingStopPrefix(text: string, stops: readonly string[]): number {
  let best = 0;
  for (const stop of stops) {
    for (let k = Math.min(stop.length - 1, text.length); k > best; k--) {
      if (text.endsWith(stop.slice(0, k))) {
        best = k;
        break;
      }
    }
  }
  return best;
}

/**
 * Answers a chat: renders the messages with the policy's chat template and samples the choices
 * ({@link sampleChoices}). Errors name the request's field (`messages`, `max_tokens`).
 */
export function generateChat(policy: Policy, req: GenerateRequest, onDelta?: DeltaSink): GenerateResult {
  const prompt = policy.renderPrompt(req.messages);
  if (prompt.length === 0) throw new GenerationError('invalid', 'the messages render to no tokens', 'messages');
  const room = policy.contextLength - prompt.length;
  if (room < 1) {
    throw new GenerationError('context_length', `the messages take ${prompt.length} tokens; this model's context is ${policy.contextLength}`, 'messages');
  }
  return { promptTokens: prompt.length, choices: sampleChoices(policy, prompt, req, onDelta) };
}

/**
 * Samples `n` choices of one prompt in one batch with the engine's KV-cache sampler, cuts each at its
 * stop token or the first stop string, and reports per-token log-probs under the model (temperature 1,
 * unfiltered: the `logProbs` the trainer uses), with the `topLogprobs` most likely tokens at each place.
 * With `stream`, `onDelta` gets text as soon as it can no longer be part of a stop string or of an
 * unfinished character (choice `indexBase + row`); the deltas of a choice concatenate to its final
 * text, and its log-probs come whole with its last delta.
 */
export function sampleChoices(policy: Policy, prompt: readonly number[], req: SampleRequest, onDelta?: DeltaSink, indexBase = 0): GeneratedChoice[] {
  const { tokenizer } = policy;
  const room = policy.contextLength - prompt.length;
  if (req.maxTokens !== undefined && req.maxTokens > room) {
    throw new GenerationError(
      'context_length',
      `max_tokens ${req.maxTokens} + ${prompt.length} prompt tokens exceed this model's context of ${policy.contextLength} (at most ${room} here)`,
      'max_tokens',
    );
  }
  const stopIds = new Set(policy.stopTokenIds);
  const rows = Array.from({ length: req.n }, () => ({
    scanner: new StopStringScanner(tokenizer, req.stop, { skipSpecial: true }),
    scanned: 0,
    emitted: '',
  }));
  const streaming = req.stream && onDelta !== undefined;
  const needHook = streaming || req.stop.length > 0;
  const topLogprobs = req.logprobs ? (req.topLogprobs ?? 0) : 0;

  const release = (row: number, generated: readonly number[]) => {
    const r = rows[row];
    let text = tokenizer.decode(generated, { skipSpecial: true });
    // An unfinished multi-byte character decodes as U+FFFD until its last byte arrives.
    while (text.endsWith('\uFFFD')) text = text.slice(0, -1);
    const safe = text.slice(0, text.length - pendingStopPrefix(text, req.stop));
    if (safe.length <= r.emitted.length || !safe.startsWith(r.emitted)) return;
    onDelta!(indexBase + row, safe.slice(r.emitted.length), null);
    r.emitted = safe;
  };

  const seqs = sample(
    policy.model,
    rows.map(() => prompt),
    {
      maxNewTokens: req.maxTokens ?? room,
      temperature: req.temperature,
      topP: req.topP,
      seed: req.seed,
      stopTokenIds: policy.stopTokenIds,
      vocabLimit: policy.tokenizer.vocabSize,
      ...(topLogprobs > 0 ? { topLogprobs } : {}),
      stopCheck: needHook
        ? (row, generated) => {
            const r = rows[row];
            let match = null;
            while (r.scanned < generated.length) match = r.scanner.push(generated[r.scanned++]);
            if (match) return true;
            if (streaming) release(row, generated);
            return false;
          }
        : undefined,
    },
  );

  return seqs.map((seq, row) => {
    const r = rows[row];
    const match = r.scanner.match;
    let kept = match ? seq.tokens.slice(0, match.tokenCount) : seq.tokens;
    if (!match && seq.finishReason === 'stop' && stopIds.has(kept[kept.length - 1])) kept = kept.slice(0, -1);
    const text = match ? match.text : tokenizer.decode(kept, { skipSpecial: true });
    const logprobs = req.logprobs ? logprobEntries(tokenizer, kept, seq.logProbs, seq.topLogProbs, kept.length) : null;
    if (streaming) {
      // The sampler's hook sees tokens but not their log-probs, so a choice's log-probs all come with its last delta.
      const rest = text.startsWith(r.emitted) ? text.slice(r.emitted.length) : '';
      if (rest.length > 0 || (logprobs && logprobs.length > 0)) onDelta!(indexBase + row, rest, logprobs);
    }
    return { text, finishReason: match ? 'stop' : seq.finishReason, completionTokens: seq.tokens.length, logprobs };
  });
}
