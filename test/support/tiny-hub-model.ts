import { ByteTokenizer, CHATML_TEMPLATE, initWeights, modelPreset, saveHfModelDir } from '@opentinker/engine';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The files of a tiny random-weight model folder as the engine saves it (config, safetensors,
 * tokenizer, chat template), for a fake Hub to serve; plus files a real repo has that a pull must skip.
 */
export async function tinyHubModelFiles(seed = 3): Promise<Record<string, Buffer>> {
  const dir = mkdtempSync(join(tmpdir(), 'tiny-hub-model-'));
  try {
    const config = { ...modelPreset('tiny-char'), max_position_embeddings: 64 };
    await saveHfModelDir(dir, { config, weights: initWeights(config, seed), tokenizer: new ByteTokenizer(), chatTemplate: CHATML_TEMPLATE });
    const files: Record<string, Buffer> = {};
    for (const name of readdirSync(dir)) files[name] = readFileSync(join(dir, name));
    files['README.md'] = Buffer.from('# tiny\n');
    files['pytorch_model.bin'] = Buffer.alloc(4096, 1);
    files['onnx/model.onnx'] = Buffer.alloc(64, 2);
    return files;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
