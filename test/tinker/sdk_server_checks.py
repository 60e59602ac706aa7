"""The official Tinker SDK, unmodified, against an OpenTinker server, as a Tinker user would drive it.

Run by test/e2e/tinker-sdk.e2e-spec.ts with each SDK release of test/tinker/sdk-versions
(test/tinker/setup-sdk.sh), against a server with the `tiny-char` preset (0.8M parameters, byte tokens:
id = byte value, so `ord(c)` is a token id). Each check prints one JSON line: {"check": name, "ok":
true, ...what it saw} or {"ok": false, "error": ...}; the script exits 1 when any check failed.

    python sdk_server_checks.py --base-url http://127.0.0.1:8780 --api-key tml-otk_... --other-key tml-otk_...
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
import traceback
from typing import Any, Callable

os.environ.setdefault("TINKER_TELEMETRY", "0")

import tinker  # noqa: E402
from tinker import types  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--base-url", required=True)
parser.add_argument("--api-key", required=True)
parser.add_argument("--other-key", required=True)
parser.add_argument("--base-model", default="tiny-char")
parser.add_argument("--only", nargs="*", help="run these checks only")
args = parser.parse_args()

VERSION = tuple(int(x) for x in tinker.__version__.split(".")[:3])
BASE = args.base_model
failed = False
state: dict[str, Any] = {}


def check(fn: Callable[[], dict[str, Any] | None]) -> Callable[[], dict[str, Any] | None]:
    global failed
    if args.only and fn.__name__ not in args.only:
        return fn
    started = time.monotonic()
    try:
        seen = fn() or {}
        print(json.dumps({"check": fn.__name__, "ok": True, "seconds": round(time.monotonic() - started, 2), **seen}), flush=True)
    except Exception as error:  # noqa: BLE001 - every failure is reported, then the next check runs
        failed = True
        print(json.dumps({"check": fn.__name__, "ok": False, "error": f"{type(error).__name__}: {error}", "trace": traceback.format_exc()}), flush=True)
    return fn


def resolve(client: Any) -> Any:
    """0.38 returns futures of clients (usable as clients, with a warning); older releases the clients."""
    return client.result() if type(client).__name__.startswith("Backcompat") else client


def ids(text: str) -> list[int]:
    return list(text.encode())


def datum(sequence: list[int], weights: list[float] | None = None) -> types.Datum:
    """A next-token datum: input = sequence[:-1], target = sequence[1:]."""
    n = len(sequence) - 1
    return types.Datum(
        model_input=types.ModelInput.from_ints(sequence[:-1]),
        loss_fn_inputs={
            "target_tokens": types.TensorData(data=sequence[1:], dtype="int64", shape=[n]),
            "weights": types.TensorData(data=weights if weights is not None else [1.0] * n, dtype="float32", shape=[n]),
        },
    )


def mean_loss(result: Any, data: list[types.Datum]) -> float:
    """Loss per weighted token from the per-datum logprobs (as the cookbook's sl_loop computes it)."""
    total = 0.0
    count = 0.0
    for out, d in zip(result.loss_fn_outputs, data):
        lp = out["logprobs"].tolist()
        w = d.loss_fn_inputs["weights"].tolist()
        total += -sum(a * b for a, b in zip(lp, w))
        count += sum(w)
    return total / count


SFT_TEXTS = ["12+34=46\n", "5+5=10\n", "7+8=15\n", "20+22=42\n"]
SFT = [datum(ids(t)) for t in SFT_TEXTS]
ADAM = types.AdamParams(learning_rate=1e-2, beta1=0.9, beta2=0.95, eps=1e-8)

service = tinker.ServiceClient(base_url=args.base_url, api_key=args.api_key)
other = tinker.ServiceClient(base_url=args.base_url, api_key=args.other_key)


@check
def capabilities():
    names = [m.model_name for m in service.get_server_capabilities().supported_models]
    assert BASE in names, names
    return {"models": names}


@check
def sft_loss_falls():
    tc = resolve(service.create_lora_training_client(base_model=BASE, rank=8, seed=3))
    state["tc"] = tc
    info = tc.get_info()
    state["model_id"] = info.model_id
    state["session_id"] = info.model_id.split(":train:")[0]
    losses = []
    for _ in range(16):
        # Both submitted before either is awaited, as the cookbook's loops do.
        fb = tc.forward_backward(SFT, "cross_entropy")
        opt = tc.optim_step(ADAM)
        result = fb.result()
        opt.result()
        losses.append(mean_loss(result, SFT))
        assert "loss:sum" in result.metrics, result.metrics
    assert losses[-1] < 0.7 * losses[0], losses
    return {"model_id": info.model_id, "session_id": state["session_id"], "losses": [round(x, 4) for x in losses], "model_name": info.model_data.model_name}


@check
def sampling_logprobs_match_forward():
    tc = state["tc"]
    sampler = resolve(tc.save_weights_and_get_sampling_client())
    prompt = ids("12+3")
    resp = sampler.sample(prompt=types.ModelInput.from_ints(prompt), num_samples=3, sampling_params=types.SamplingParams(max_tokens=6, temperature=1.0, seed=11)).result()
    assert len(resp.sequences) == 3, resp
    worst = 0.0
    for seq in resp.sequences:
        assert len(seq.logprobs) == len(seq.tokens) > 0, seq
        full = prompt + list(seq.tokens)
        d = datum(full)
        fwd = tc.forward([d], "cross_entropy").result()
        lp = fwd.loss_fn_outputs[0]["logprobs"].tolist()[len(prompt) - 1 :]
        worst = max(worst, max(abs(a - b) for a, b in zip(lp, seq.logprobs)))
    assert worst < 2e-3, worst
    scored = sampler.compute_logprobs(types.ModelInput.from_ints(prompt + list(resp.sequences[0].tokens))).result()
    assert scored[0] is None, scored[:2]
    fwd0 = tc.forward([datum(prompt + list(resp.sequences[0].tokens))], "cross_entropy").result().loss_fn_outputs[0]["logprobs"].tolist()
    worst_prompt = max(abs(a - b) for a, b in zip(scored[1:], fwd0))
    assert worst_prompt < 2e-3, worst_prompt
    state["sampler"] = sampler
    return {"max_abs_diff": worst, "compute_logprobs_max_abs_diff": worst_prompt, "stop_reasons": [s.stop_reason for s in resp.sequences]}


@check
def stop_token_and_string():
    sampler = state["sampler"]
    newline = ids("\n")[0]
    r = sampler.sample(prompt=types.ModelInput.from_ints(ids("5+5=")), num_samples=2, sampling_params=types.SamplingParams(max_tokens=12, stop=[newline], seed=1)).result()
    for seq in r.sequences:
        # The model's end of sequence (a byte tokenizer's specials are 256 and up) stops too.
        assert seq.stop_reason == "length" or seq.tokens[-1] in (newline, *range(256, 260)), seq
    s = sampler.sample(prompt=types.ModelInput.from_ints(ids("5+5=")), num_samples=2, sampling_params=types.SamplingParams(max_tokens=12, stop=["1"], seed=1)).result()
    for seq in s.sequences:
        assert seq.stop_reason == "length" or bytes(seq.tokens).decode("latin-1").endswith("1"), seq
    return {"stop_token": [list(q.tokens) for q in r.sequences], "stop_string": [list(q.tokens) for q in s.sequences]}


@check
def save_state_then_new_client_continues():
    tc = state["tc"]
    before = mean_loss(tc.forward(SFT, "cross_entropy").result(), SFT)
    path = tc.save_state("ckpt-a").result().path
    assert path.startswith("tinker://") and path.endswith("/weights/ckpt-a"), path
    tc2 = resolve(service.create_training_client_from_state_with_optimizer(path))
    state["tc2"] = tc2
    loaded = mean_loss(tc2.forward(SFT, "cross_entropy").result(), SFT)
    assert abs(loaded - before) < 1e-4, (before, loaded)
    losses = []
    for _ in range(4):
        fb = tc2.forward_backward(SFT, "cross_entropy")
        tc2.optim_step(ADAM).result()
        losses.append(mean_loss(fb.result(), SFT))
    after = mean_loss(tc2.forward(SFT, "cross_entropy").result(), SFT)
    assert after < loaded, (loaded, after)
    # The first client did not move.
    still = mean_loss(tc.forward(SFT, "cross_entropy").result(), SFT)
    assert abs(still - before) < 1e-5, (before, still)
    info = tc2.get_info()
    return {"path": path, "loss_saved": before, "loss_loaded": loaded, "loss_after": after, "new_model_id": info.model_id}


@check
def two_clients_one_base():
    ids_ = [state["tc"].get_info().model_id, state["tc2"].get_info().model_id]
    assert len(set(ids_)) == 2, ids_
    assert all(i.startswith(state["session_id"] + ":train:") for i in ids_), ids_
    return {"model_ids": ids_}


@check
def rl_reward_rises():
    """importance_sampling on a small task: the reward is the share of digits among 6 sampled tokens."""
    STEPS = 10
    LR = 1e-2
    tc = resolve(service.create_lora_training_client(base_model=BASE, rank=8, seed=5))
    prompt = ids("Q:")
    digits = set(ids("0123456789"))
    rewards = []
    for step in range(STEPS):
        sampler = resolve(tc.save_weights_and_get_sampling_client())
        resp = sampler.sample(prompt=types.ModelInput.from_ints(prompt), num_samples=16, sampling_params=types.SamplingParams(max_tokens=6, temperature=1.0, seed=step)).result()
        scores = [sum(t in digits for t in s.tokens) / max(1, len(s.tokens)) for s in resp.sequences]
        mean = sum(scores) / len(scores)
        rewards.append(mean)
        data = []
        for s, r in zip(resp.sequences, scores):
            full = prompt + list(s.tokens)
            n = len(full) - 1
            k = len(prompt) - 1
            data.append(
                types.Datum(
                    model_input=types.ModelInput.from_ints(full[:-1]),
                    loss_fn_inputs={
                        "target_tokens": types.TensorData(data=full[1:], dtype="int64", shape=[n]),
                        "logprobs": types.TensorData(data=[0.0] * k + list(s.logprobs), dtype="float32", shape=[n]),
                        "advantages": types.TensorData(data=[0.0] * k + [r - mean] * len(s.tokens), dtype="float32", shape=[n]),
                    },
                )
            )
        fb = tc.forward_backward(data, "importance_sampling")
        tc.optim_step(types.AdamParams(learning_rate=LR)).result()
        fb.result()
    first = sum(rewards[:3]) / 3
    last = sum(rewards[-3:]) / 3
    assert last > first + 0.15, rewards
    return {"rewards": [round(r, 3) for r in rewards]}


@check
def bad_request_raises_quickly():
    tc = state["tc"]
    started = time.monotonic()
    try:
        tc.forward_backward(SFT, "stable_reinforce").result()
        raise AssertionError("stable_reinforce was accepted")
    except tinker.BadRequestError as e:
        loss_error = str(e)
    try:
        tc.optim_step(types.AdamParams(learning_rate=-1.0)).result()
        raise AssertionError("a negative learning rate was accepted")
    except tinker.BadRequestError as e:
        lr_error = str(e)
    # The training client goes on after refused requests (their seq_ids are not waited for).
    tc.forward(SFT, "cross_entropy").result()
    # A mistake only the runner can see fails the future with category user.
    try:
        state["sampler"].sample(prompt=types.ModelInput.from_ints([1, 2]), num_samples=1, sampling_params=types.SamplingParams(max_tokens=100_000)).result()
        raise AssertionError("max_tokens over the context was accepted")
    except tinker.RequestFailedError as e:
        category = str(getattr(e.category, "value", e.category))
        failed_error = str(e)
    seconds = time.monotonic() - started
    assert seconds < 10, seconds
    assert category.lower() == "user", category
    return {"seconds": round(seconds, 2), "loss_error": loss_error[:200], "lr_error": lr_error[:200], "failed": failed_error[:200], "category": category}


@check
def rest_client_checkpoints():
    rest = service.create_rest_client()
    model_id = state["model_id"]
    path = state["tc"].save_weights_for_sampler("sampler-a").result().path
    listed = [c.tinker_path for c in rest.list_checkpoints(model_id).result().checkpoints]
    assert path in listed and f"tinker://{model_id}/weights/ckpt-a" in listed, listed
    run = rest.get_training_run(model_id).result()
    assert run.training_run_id == model_id and run.lora_rank == 8, run
    info = rest.get_weights_info_by_tinker_path(f"tinker://{model_id}/weights/ckpt-a").result()
    assert info.lora_rank == 8 and info.base_model == BASE, info
    from_path = resolve(service.create_sampling_client(model_path=path))
    from_path.sample(prompt=types.ModelInput.from_ints(ids("1+")), num_samples=1, sampling_params=types.SamplingParams(max_tokens=3)).result()
    rest.delete_checkpoint_from_tinker_path(path).result()
    after = [c.tinker_path for c in rest.list_checkpoints(model_id).result().checkpoints]
    assert path not in after, after
    runs = rest.list_training_runs().result()
    return {"listed": listed, "after_delete": after, "training_runs": len(runs.training_runs)}


@check
def checkpoint_archive_download():
    """RestClient.get_checkpoint_archive_url* (before 0.38, which exports through save_weights_external):
    a URL fetched without the key, as the SDK's `tinker checkpoint download` fetches it, unpacking to
    the PEFT folder; another user is answered 404."""
    rest = service.create_rest_client()
    if not hasattr(rest, "get_checkpoint_archive_url_from_tinker_path"):
        return {"skipped": f"SDK {tinker.__version__} has no get_checkpoint_archive_url"}
    import io
    import tarfile
    import urllib.request

    path = f"tinker://{state['model_id']}/weights/ckpt-a"
    answer = rest.get_checkpoint_archive_url_from_tinker_path(path).result()
    with urllib.request.urlopen(answer.url, timeout=60) as response:
        data = response.read()
    names = tarfile.open(fileobj=io.BytesIO(data)).getnames()
    assert "adapter_config.json" in names and "adapter_model.safetensors" in names, names
    try:
        other.create_rest_client().get_checkpoint_archive_url_from_tinker_path(path).result()
        raise AssertionError("another user got a download URL")
    except tinker.NotFoundError:
        pass
    return {"names": names, "bytes": len(data), "expires": str(answer.expires)}


@check
def unloadable_base_model_raises_quickly():
    """A base model the server cannot load (no such Hub repo) fails the training client's creation with
    the reason, category user, at once."""
    # A session of its own, so the first session keeps its one runner.
    fresh = tinker.ServiceClient(base_url=args.base_url, api_key=args.api_key)
    started = time.monotonic()
    try:
        resolve(fresh.create_lora_training_client(base_model="nobody/no-such-model", rank=2)).get_info()
        raise AssertionError("a training client on a missing base model was created")
    except tinker.RequestFailedError as e:
        category = str(getattr(e.category, "value", e.category))
        message = str(e)
    seconds = time.monotonic() - started
    if hasattr(fresh, "close"):
        fresh.close("success")
    assert "no-such-model" in message, message
    assert category.lower() == "user", category
    assert seconds < 60, seconds
    return {"seconds": round(seconds, 2), "error": message[:300], "category": category}


@check
def another_user_gets_404():
    rest = other.create_rest_client()
    model_id = state["model_id"]
    try:
        rest.get_training_run(model_id).result()
        raise AssertionError("another user read the training run")
    except tinker.NotFoundError:
        pass
    try:
        resolve(other.create_training_client_from_state(f"tinker://{model_id}/weights/ckpt-a")).get_info()
        raise AssertionError("another user loaded the checkpoint")
    except tinker.NotFoundError:
        pass
    return {}


if hasattr(service, "close"):

    @check
    def finish_session():
        service.close("success")
        return {}


sys.exit(1 if failed else 0)
