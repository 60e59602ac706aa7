import { ByteTokenizer, CHATML_TEMPLATE, initWeights, modelPreset, saveHfModelDir } from '@opentinker/engine';

/**
 * A tiny base model folder (tiny-char's shape, byte tokens: id = byte value) that LoRA can move in a few
 * steps. Freshly initialised weights give near-uniform next-token distributions that a LoRA on the layers
 * alone cannot sharpen (the final norm and the tied head stay frozen); a final norm six times the
 * initial one gives the logits the range a trained model has.
 */
export async function writeTinkerTestBase(dir: string, seed = 0): Promise<void> {
  const config = { ...modelPreset('tiny-char'), vocab_size: new ByteTokenizer().vocabSize };
  const weights = initWeights(config, seed);
  const norm = weights.get('model.norm.weight')!;
  for (let i = 0; i < norm.data.length; i++) norm.data[i] *= 6;
  await saveHfModelDir(dir, { config, weights, tokenizer: new ByteTokenizer(), chatTemplate: CHATML_TEMPLATE });
}
