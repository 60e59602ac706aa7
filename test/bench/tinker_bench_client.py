"""The official Tinker SDK's side of test/bench/tinker.bench.js (run with .venv-tinker's Python).

  python tinker_bench_client.py <base_url> <base_model> <clients> <steps> <seq> <rank> <vocab>

Opens a session, creates <clients> LoRA training clients on <base_model>, takes one warm-up step with
each, then <steps> steps in which every client sends forward_backward (cross_entropy, one datum of
<seq> tokens) and optim_step before any result is awaited: with several clients their requests
interleave in the runner. Prints one JSON line: each step's wall time (all clients' results in) and
each client's request latency (forward_backward sent to optim_step's result).
"""

import json
import random
import sys
import time

import tinker
from tinker import types


def datum(rng: random.Random, seq: int, vocab: int) -> types.Datum:
    tokens = [rng.randrange(vocab) for _ in range(seq + 1)]
    return types.Datum(
        model_input=types.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={
            "target_tokens": types.TensorData(data=tokens[1:], dtype="int64", shape=[seq]),
            "weights": types.TensorData(data=[1.0] * seq, dtype="float32", shape=[seq]),
        },
    )


def main() -> None:
    base_url, base_model = sys.argv[1], sys.argv[2]
    clients, steps, seq, rank, vocab = (int(x) for x in sys.argv[3:8])
    rng = random.Random(7)
    data = [datum(rng, seq, vocab) for _ in range(clients)]
    sc = tinker.ServiceClient(base_url=base_url)
    t0 = time.perf_counter()
    tcs = [sc.create_lora_training_client(base_model=base_model, rank=rank) for _ in range(clients)]
    # 0.38 hands back a future of the client (using it as the client is deprecated); older releases the client.
    tcs = [tc.result() if hasattr(tc, "result") else tc for tc in tcs]
    created = time.perf_counter() - t0
    adam = types.AdamParams(learning_rate=1e-4)

    def step() -> tuple[float, list[float]]:
        start = time.perf_counter()
        sent = []
        for tc, d in zip(tcs, data):
            sent.append((time.perf_counter(), tc.forward_backward([d], "cross_entropy"), tc.optim_step(adam)))
        latencies = []
        for at, fb, op in sent:
            fb.result()
            op.result()
            latencies.append(time.perf_counter() - at)
        return time.perf_counter() - start, latencies

    warm = step()
    walls, latencies = [], []
    for _ in range(steps):
        wall, lat = step()
        walls.append(wall)
        latencies.extend(lat)
    print(json.dumps({"clients": clients, "created_s": created, "warmup_s": warm[0], "step_walls_s": walls, "latencies_s": latencies}))
    sc.close("success").result()


if __name__ == "__main__":
    main()
