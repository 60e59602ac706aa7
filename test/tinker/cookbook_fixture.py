"""Local stand-ins for what tinker-cookbook's sl_loop and rl_loop fetch from the Hugging Face Hub.

Usage: cookbook_fixture.py <dir>. Writes, under <dir>:

- ``data/HuggingFaceH4/no_robots/train.jsonl`` and ``data/openai/gsm8k/`` (config ``main``): dataset
  folders that ``datasets.load_dataset("HuggingFaceH4/no_robots")`` and
  ``datasets.load_dataset("openai/gsm8k", "main")`` read when run from ``<dir>/data`` (a local folder of
  the name wins over the Hub). Made-up rows of the same fields: chat ``messages``; ``question`` and an
  ``answer`` ending in ``#### <number>``.
- ``hub/models--Qwen--Qwen3-8B-Base/``: a Hub-cache snapshot under the name the recipes' model table
  knows (the cookbook picks its renderer, here ``role_colon``, from the name), holding a tiny
  Qwen2-shaped model with random weights and a byte-level BPE tokenizer trained on the rows above, with
  ``\\boxed{0}`` … ``\\boxed{8}`` as tokens of their own. Both
  the server (``hub_cache_dir``, ``HF_HUB_OFFLINE=1``) and the recipe's ``AutoTokenizer``
  (``HF_HUB_CACHE``) load it from there. It is not Qwen3-8B: the recipes only need the name.
"""

import json
import os
import random
import sys

REPO = "Qwen/Qwen3-8B-Base"
COMMIT = "0" * 39 + "1"


def sft_rows(n: int) -> list[dict]:
    rnd = random.Random(0)
    words = ["apple", "river", "stone", "cloud", "green", "seven", "light", "table", "music", "bread"]
    rows = []
    for i in range(n):
        w = rnd.sample(words, 3)
        rows.append(
            {
                "prompt": f"Repeat: {' '.join(w)}",
                "prompt_id": str(i),
                "category": "Generation",
                "messages": [
                    {"role": "user", "content": f"Repeat: {' '.join(w)}"},
                    {"role": "assistant", "content": " ".join(w)},
                ],
            }
        )
    return rows


def gsm8k_rows(n: int) -> list[dict]:
    rnd = random.Random(1)
    rows = []
    for _ in range(n):
        a, b = rnd.randint(0, 4), rnd.randint(0, 4)
        rows.append({"question": f"What is {a} + {b}?", "answer": f"{a} + {b} = <<{a}+{b}={a + b}>>{a + b}\n#### {a + b}"})
    return rows


def write_jsonl(path: str, rows: list[dict]) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def main(out: str) -> None:
    sft = sft_rows(256)
    gsm = gsm8k_rows(256)
    write_jsonl(f"{out}/data/HuggingFaceH4/no_robots/train.jsonl", sft)
    write_jsonl(f"{out}/data/openai/gsm8k/main/train.jsonl", gsm)
    with open(f"{out}/data/openai/gsm8k/README.md", "w") as f:
        f.write("---\nconfigs:\n- config_name: main\n  data_files:\n  - split: train\n    path: main/train.jsonl\n---\n")

    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    texts = [m["content"] for r in sft for m in r["messages"]] + [r["question"] + " " + r["answer"] for r in gsm]
    texts += ["User: Assistant: System: \\boxed{3}", "Let's spell the word out and number all the letters"]
    trainer = trainers.BpeTrainer(
        vocab_size=512, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tok.train_from_iterator(texts, trainer)
    # Whole answers as single tokens, so that a random model's samples sometimes hold a right one and
    # rl_loop's groups have rewards that differ (a group whose rewards are all equal is skipped).
    tok.add_tokens([AddedToken(f"\\boxed{{{n}}}", normalized=False) for n in range(9)])

    snap = f"{out}/hub/models--Qwen--Qwen3-8B-Base/snapshots/{COMMIT}"
    os.makedirs(snap, exist_ok=True)
    os.makedirs(f"{out}/hub/models--Qwen--Qwen3-8B-Base/refs", exist_ok=True)
    with open(f"{out}/hub/models--Qwen--Qwen3-8B-Base/refs/main", "w") as f:
        f.write(COMMIT)
    tok.save(f"{snap}/tokenizer.json")
    with open(f"{snap}/tokenizer_config.json", "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|endoftext|>", "model_max_length": 512}, f)

    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=tok.get_vocab_size(),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        tie_word_embeddings=True,
        eos_token_id=tok.token_to_id("<|endoftext|>"),
        bos_token_id=None,
    )
    Qwen2ForCausalLM(config).save_pretrained(snap, safe_serialization=True)
    print(f"fixture: {len(sft)} SFT rows, {len(gsm)} GSM8K-style rows, {REPO} stand-in (qwen2, vocab {config.vocab_size}) at {snap}")


if __name__ == "__main__":
    main(sys.argv[1])
