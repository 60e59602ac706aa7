"""PEFT's own behaviour for an unembedding LoRA (target `lm_head`), as fixtures for the engine's tests.

Writes `src/__golden__/peft-lm-head/`:
- `base/`: a tiny Qwen2 model with tied embeddings, saved by transformers (no `lm_head.weight`);
- `adapter/`: a PEFT LoRA on q_proj, v_proj and lm_head with random lora_B, saved by PEFT with its
  defaults, so it also carries `base_model.model.lm_head.base_layer.weight` (PEFT saves the head when
  an embedding-like layer is targeted);
- `expected.json`: the adapted model's logits for two rows, with and without the adapter.

Needs torch, transformers and peft (the versions used are recorded in expected.json):
    python3 -m venv /tmp/peft-venv && /tmp/peft-venv/bin/pip install torch transformers peft safetensors
    /tmp/peft-venv/bin/python libs/engine/reference/peft_lm_head.py
"""

import json
import os
import shutil
import warnings

import peft
import torch
import transformers
from peft import LoraConfig, get_peft_model
from transformers import Qwen2Config, Qwen2ForCausalLM

OUT = os.path.join(os.path.dirname(__file__), '..', 'src', '__golden__', 'peft-lm-head')
ROWS = [[1, 5, 9, 2, 33, 7], [60, 3, 3, 41, 0, 12]]


def main():
    warnings.simplefilter('ignore')
    torch.manual_seed(7)
    shutil.rmtree(OUT, ignore_errors=True)
    config = Qwen2Config(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        tie_word_embeddings=True,
        rms_norm_eps=1e-6,
        rope_theta=10000.0,
        torch_dtype='float32',
    )
    base = Qwen2ForCausalLM(config).eval()
    base.save_pretrained(os.path.join(OUT, 'base'), safe_serialization=True)
    ids = torch.tensor(ROWS)
    with torch.no_grad():
        base_logits = base(ids).logits
    model = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules=['q_proj', 'v_proj', 'lm_head'], lora_dropout=0.0))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if 'lora_B' in name:
                p.normal_(0, 0.3)
    model.eval()
    with torch.no_grad():
        logits = model(ids).logits
    model.save_pretrained(os.path.join(OUT, 'adapter'))
    os.remove(os.path.join(OUT, 'adapter', 'README.md'))  # PEFT's model card template
    expected = {
        'versions': {'torch': torch.__version__, 'transformers': transformers.__version__, 'peft': peft.__version__},
        'rows': ROWS,
        'logits': logits.flatten().tolist(),
        'baseLogits': base_logits.flatten().tolist(),
        'shape': list(logits.shape),
    }
    with open(os.path.join(OUT, 'expected.json'), 'w') as f:
        json.dump(expected, f)


if __name__ == '__main__':
    main()
