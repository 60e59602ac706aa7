"""Drives the official Tinker SDK through every call a Tinker server must answer, against the
recording fake (fake_tinker_server.py), checks what the SDK made of the fake's answers, and writes
the capture: every exchange, plus what the SDK returned or raised.

    .venv-tinker-0.38.0/bin/python test/tinker/capture_sdk.py test/fixtures/tinker/sdk-0.38.0.json

The values it sends come from test/fixtures/tinker/scenario.json, which the TypeScript tests read
too. Works with every SDK from 0.25.0 on; calls that an SDK lacks are skipped and say so.
"""

from __future__ import annotations

import inspect
import json
import math
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

os.environ.setdefault("TINKER_TELEMETRY", "1")
os.environ.pop("TINKER_API_KEY", None)
os.environ.pop("TINKER_BASE_URL", None)

import tinker  # noqa: E402
from tinker import types  # noqa: E402

from fake_tinker_server import FakeTinker, serve  # noqa: E402

SCENARIO = json.loads((HERE.parent / "fixtures" / "tinker" / "scenario.json").read_text())
VERSION = tinker.__version__
PLAIN_KEY = "tml-wire-test-plain-key"
# Without these, SDKs 0.22.3 to 0.24.1 send forward_backward as JSON and forward to /api/v1/forward.
LEGACY_PROTOBUF_FLAGS = {"proto_write_fwdbwd": True, "fwd_via_fwdbwd": True}
CHUNKED_KEY = "tml-wire-test-chunked-key"

observed: dict[str, Any] = {}
skipped: list[str] = []


def version_tuple() -> tuple[int, ...]:
    return tuple(int(x) for x in VERSION.split(".")[:3])


def check(cond: bool, what: str) -> None:
    if not cond:
        raise AssertionError(what)


def model_input(chunks: list[list[int]]) -> types.ModelInput:
    return types.ModelInput(chunks=[types.EncodedTextChunk(tokens=c) for c in chunks])


def dense_datum(d: dict[str, Any]) -> types.Datum:
    inputs: dict[str, Any] = {"target_tokens": types.TensorData(data=d["target_tokens"], dtype="int64", shape=[len(d["target_tokens"])])}
    for name in ("weights", "logprobs", "advantages"):
        if name in d:
            inputs[name] = types.TensorData(data=d[name], dtype="float32", shape=[len(d[name])])
    return types.Datum(model_input=model_input(d["chunks"]), loss_fn_inputs=inputs)


def sparse_datum(d: dict[str, Any]) -> types.Datum:
    def csr(t: dict[str, Any], dtype: str) -> types.TensorData:
        return types.TensorData(data=t["values"], dtype=dtype, shape=d["shape"], sparse_crow_indices=t["crow_indices"], sparse_col_indices=t["col_indices"])

    return types.Datum(model_input=model_input(d["chunks"]), loss_fn_inputs={"target_tokens": csr(d["target_tokens"], "int64"), "weights": csr(d["weights"], "float32")})


def resolve(client: Any) -> Any:
    """0.38 returns futures of clients (usable as clients, with a warning); 0.25 the clients."""
    return client.result() if type(client).__name__.startswith("Backcompat") else client


def expected_logprobs(targets: list[int]) -> list[float]:
    return [-(t + 1) / 100 for t in targets]


def close_to(a: list[float], b: list[float]) -> bool:
    return len(a) == len(b) and all(abs(x - y) <= 1e-6 * max(1.0, abs(y)) for x, y in zip(a, b))


def run(app: FakeTinker, base_url: str) -> None:
    s = SCENARIO
    app.step = "service_client"
    sc = tinker.ServiceClient(base_url=base_url, api_key=PLAIN_KEY)

    app.step = "get_server_capabilities"
    caps = sc.get_server_capabilities()
    observed["capabilities"] = [m.model_name for m in caps.supported_models]

    app.step = "create_lora_training_client"
    tc = resolve(sc.create_lora_training_client(base_model=s["base_model"], **s["lora"]))
    info = tc.get_info()
    observed["model_id"] = info.model_id
    observed["get_info"] = info.model_dump(mode="json")

    app.step = "create_lora_training_client rank 0 (a 400 answer)"
    started = time.monotonic()
    try:
        resolve(sc.create_lora_training_client(base_model=s["base_model"], rank=0))
        raise AssertionError("rank 0 was accepted")
    except tinker.BadRequestError as e:
        observed["bad_request"] = {"exception": type(e).__name__, "status": e.status_code, "seconds_under_5": time.monotonic() - started < 5}

    app.step = "forward_backward cross_entropy and optim_step, submitted back to back"
    ce = [dense_datum(d) for d in s["cross_entropy"]]
    fb = tc.forward_backward(ce, "cross_entropy")
    opt = tc.optim_step(types.AdamParams(**s["adam"]))
    fb_result = fb.result()
    opt_result = opt.result()
    for out, d in zip(fb_result.loss_fn_outputs, s["cross_entropy"]):
        check(close_to(out["logprobs"].tolist(), expected_logprobs(d["target_tokens"])), "cross_entropy logprobs")
    observed["forward_backward"] = {"loss_fn_output_type": fb_result.loss_fn_output_type, "metrics": fb_result.metrics, "output_names": sorted(fb_result.loss_fn_outputs[0])}
    observed["optim_step"] = {"metrics": opt_result.metrics}

    app.step = "forward_backward cross_entropy sparse"
    tc.forward_backward([sparse_datum(s["cross_entropy_sparse"])], "cross_entropy").result()

    app.step = "forward_backward importance_sampling"
    isd = [dense_datum(d) for d in s["importance_sampling"]]
    tc.forward_backward(isd, "importance_sampling").result()

    app.step = "forward_backward ppo with loss_fn_config"
    tc.forward_backward(isd, "ppo", s["ppo_config"]).result()

    if version_tuple() >= (0, 27):
        app.step = "forward_backward cispo with a text-valued loss_fn_config"
        tc.forward_backward(isd, "cispo", s["text_config"]).result()
    else:
        skipped.append("text-valued loss_fn_config (loss_fn_config_v2): SDK < 0.27")

    if hasattr(types.Datum, "with_provenance"):
        app.step = "forward_backward with provenance spans"
        pv = s["provenance"]

        def spans(items: list[dict[str, Any]]) -> list[Any]:
            return [(types.PromptProvenanceSpan if i["kind"] == "prompt" else types.SampledProvenanceSpan)(sequence_id=i["sequence_id"], offset=i["offset"], length=i["length"]) for i in items]

        datum = dense_datum(s["importance_sampling"][0]).with_provenance(model_input=spans(pv["model_input"]), loss_fn_inputs=spans(pv["loss_fn_inputs"]))
        tc.forward_backward([datum], "importance_sampling").result()
    else:
        skipped.append("provenance spans: SDK without Datum.with_provenance")

    app.step = "forward (forward_only)"
    fwd = tc.forward(ce, "cross_entropy").result()
    check(close_to(fwd.loss_fn_outputs[1]["logprobs"].tolist(), expected_logprobs(s["cross_entropy"][1]["target_tokens"])), "forward logprobs")

    app.step = "optim_step with a negative learning rate (a failed future, category user)"
    started = time.monotonic()
    try:
        tc.optim_step(types.AdamParams(**s["bad_adam"])).result()
        raise AssertionError("negative learning rate was accepted")
    except tinker.RequestFailedError as e:
        observed["request_failed"] = {"exception": type(e).__name__, "category": str(e.category.value if hasattr(e.category, "value") else e.category), "seconds_under_5": time.monotonic() - started < 5}

    app.step = "save_state"
    saved = tc.save_state("ckpt-1").result()
    observed["save_state"] = saved.path
    app.step = "save_weights_for_sampler"
    sampler_saved = tc.save_weights_for_sampler("sampler-1").result()
    observed["save_weights_for_sampler"] = sampler_saved.path
    app.step = "save_weights_and_get_sampling_client"
    sampler = resolve(tc.save_weights_and_get_sampling_client())

    app.step = "sample (num_samples, stop strings, seed, prompt logprobs, top-k prompt logprobs)"
    sp = s["sample"]
    resp = sampler.sample(
        prompt=types.ModelInput.from_ints(sp["prompt"]),
        num_samples=sp["num_samples"],
        sampling_params=types.SamplingParams(**sp["params"]),
        include_prompt_logprobs=True,
        topk_prompt_logprobs=sp["topk_prompt_logprobs"],
    ).result()
    check(len(resp.sequences) == sp["num_samples"], "num_samples sequences")
    check(resp.sequences[1].tokens == [sp["prompt"][-1] + 2 + j for j in range(sp["params"]["max_tokens"])], "sampled tokens")
    check(math.isnan(resp.prompt_logprobs[0]) if resp.prompt_logprobs and resp.prompt_logprobs[0] is not None else True, "prompt logprob 0")
    observed["sample"] = {
        "stop_reasons": [q.stop_reason for q in resp.sequences],
        "sequence_ids": [getattr(q, "sequence_id", None) for q in resp.sequences],
        "prompt_logprobs": [None if (x is None or math.isnan(x)) else round(x, 6) for x in resp.prompt_logprobs],
        "topk_prompt_logprobs_rows": len(resp.topk_prompt_logprobs) if resp.topk_prompt_logprobs is not None else None,
    }

    app.step = "sample with stop token ids"
    st = s["sample_stop_tokens"]
    r2 = sampler.sample(prompt=types.ModelInput.from_ints(st["prompt"]), num_samples=st["num_samples"], sampling_params=types.SamplingParams(**st["params"])).result()
    check(r2.sequences[0].stop_reason == "stop" and r2.sequences[0].tokens[-1] == st["params"]["stop"][0], "stop token kept")

    app.step = "sample with one stop string"
    ss = s["sample_stop_string"]
    sampler.sample(prompt=types.ModelInput.from_ints(ss["prompt"]), num_samples=ss["num_samples"], sampling_params=types.SamplingParams(**ss["params"])).result()

    app.step = "compute_logprobs"
    lp = sampler.compute_logprobs(types.ModelInput.from_ints(s["compute_logprobs"]["prompt"])).result()
    check(lp[0] is None and abs(lp[1] + 0.1) < 1e-6, "compute_logprobs")
    observed["compute_logprobs"] = lp

    if "target_prompt_logprobs" in inspect.signature(sampler.sample).parameters:
        app.step = "sample with target_prompt_logprobs (sparse) and topk_sample_logprobs"
        tg = s["sample_targets"]
        t = tg["target_prompt_logprobs"]
        target = types.TensorData(data=t["values"], dtype="int64", shape=t["shape"], sparse_crow_indices=t["crow_indices"], sparse_col_indices=t["col_indices"])
        r3 = sampler.sample(
            prompt=types.ModelInput.from_ints(tg["prompt"]),
            num_samples=1,
            sampling_params=types.SamplingParams(**tg["params"]),
            topk_sample_logprobs=tg["topk_sample_logprobs"],
            target_prompt_logprobs=target,
        ).result()
        check(r3.target_prompt_logprobs is not None and r3.target_prompt_logprobs.sparse_col_indices == t["col_indices"], "target prompt logprobs stay sparse")
        observed["target_prompt_logprobs"] = {"values": [round(float(x), 6) for x in r3.target_prompt_logprobs._numpy.tolist()], "shape": r3.target_prompt_logprobs.shape}
        observed["topk_sampled_logprobs_shape"] = list(r3.sequences[0].topk_logprobs_np.token_ids.shape)
    else:
        skipped.append("target_prompt_logprobs / topk_sample_logprobs: SDK without them")

    app.step = "create_sampling_client from a tinker path"
    sampler2 = sc.create_sampling_client(model_path=sampler_saved.path)
    sampler2 = resolve(sampler2)
    observed["sampler_from_path_base_model"] = sampler2.get_base_model()
    app.step = "create_sampling_client from a base model"
    sampler3 = sc.create_sampling_client(base_model=s["base_model"])
    sampler3 = resolve(sampler3)
    sampler3.sample(prompt=types.ModelInput.from_ints([1, 2]), num_samples=1, sampling_params=types.SamplingParams(max_tokens=1)).result()

    app.step = "create_training_client_from_state, then forward_backward on it"
    tc2 = sc.create_training_client_from_state(saved.path)
    tc2 = resolve(tc2)
    observed["from_state_model_id"] = tc2.get_info().model_id
    tc2.forward_backward(ce[:1], "cross_entropy").result()
    app.step = "create_training_client_from_state_with_optimizer"
    tc3 = sc.create_training_client_from_state_with_optimizer(saved.path)
    tc3 = resolve(tc3)
    observed["from_state_with_optimizer_model_id"] = tc3.get_info().model_id

    app.step = "load_state (deprecated, on an existing training client)"
    tc3.load_state(saved.path).result()

    app.step = "rest_client"
    rest = sc.create_rest_client()
    if hasattr(rest, "get_server_capabilities"):
        app.step = "rest_client.get_server_capabilities"
        rest.get_server_capabilities().result()
    else:
        skipped.append("RestClient.get_server_capabilities: SDK < 0.38 (ServiceClient's only)")
    app.step = "rest_client.list_checkpoints"
    listed = rest.list_checkpoints(info.model_id).result()
    observed["checkpoints"] = [c.tinker_path for c in listed.checkpoints]
    app.step = "rest_client.get_training_run"
    observed["training_run"] = rest.get_training_run(info.model_id).result().training_run_id
    app.step = "rest_client.get_training_run_by_tinker_path"
    rest.get_training_run_by_tinker_path(saved.path).result()
    app.step = "rest_client.list_training_runs"
    observed["training_runs"] = len(rest.list_training_runs().result().training_runs)
    app.step = "rest_client.get_weights_info_by_tinker_path"
    observed["weights_info"] = rest.get_weights_info_by_tinker_path(saved.path).result().model_dump(mode="json")
    app.step = "rest_client.list_user_checkpoints"
    rest.list_user_checkpoints().result()
    app.step = "rest_client.get_sampler"
    rest.get_sampler(sampler3._sampling_session_id if hasattr(sampler3, "_sampling_session_id") else "x").result()
    app.step = "rest_client.delete_checkpoint_from_tinker_path"
    rest.delete_checkpoint_from_tinker_path(sampler_saved.path).result()
    app.step = "rest_client.delete_checkpoint"
    rest.delete_checkpoint(info.model_id, "weights/ckpt-1").result()
    observed["deleted"] = list(app.deleted)

    app.step = "heartbeat (waits 11 s)"
    time.sleep(11)

    if hasattr(sc, "close"):
        app.step = "close (sessions finish)"
        sc.close("success", detail="capture done").result()
    else:
        skipped.append("ServiceClient.close / sessions/{id}/finish: SDK < 0.28")

    # A second session whose client config asks for zstd bodies and small chunks.
    app.step = "chunked: service_client with proto_compress_fwdbwd and fwdbwd_max_chunk_len"
    sc2 = tinker.ServiceClient(base_url=base_url, api_key=CHUNKED_KEY)
    tcc = resolve(sc2.create_lora_training_client(base_model=s["base_model"], rank=4))
    app.step = "chunked: forward_backward of 5 datums in chunks of 2, zstd"
    chunked = [dense_datum(d) for d in s["chunked"]["datums"]]
    res = tcc.forward_backward(chunked, "cross_entropy").result()
    check(len(res.loss_fn_outputs) == 5, "chunked outputs concatenated")
    for out, d in zip(res.loss_fn_outputs, s["chunked"]["datums"]):
        check(close_to(out["logprobs"].tolist(), expected_logprobs(d["target_tokens"])), "chunked logprobs in order")
    observed["chunked"] = {"metrics": res.metrics, "outputs": len(res.loss_fn_outputs)}
    app.step = "chunked: create_training_client_from_state with create_model_via_load_weights in the client config"
    tcl = resolve(sc2.create_training_client_from_state(observed["save_state"]))
    observed["chunked_from_state_model_id"] = tcl.get_info().model_id
    if hasattr(sc2, "close"):
        sc2.close("success").result()


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", default=str(HERE.parent / "fixtures" / "tinker" / f"sdk-{VERSION}.json"))
    parser.add_argument("--client-config", help="JSON merged into every client config answer (default: the flags SDKs before 0.25 need to speak protobuf, for those)")
    args = parser.parse_args()
    out = Path(args.out)
    extra = json.loads(args.client_config) if args.client_config is not None else (LEGACY_PROTOBUF_FLAGS if version_tuple() < (0, 25) else {})
    app = FakeTinker(configs={PLAIN_KEY: extra, CHUNKED_KEY: {**SCENARIO["chunked"]["client_config"], **extra}})
    app.step = "start"
    original_handle = app.handle

    def tagged(method: str, raw_path: str, headers: dict[str, str], body: bytes):
        step = app.step
        result = original_handle(method, raw_path, headers, body)
        with app.lock:
            app.records[-1]["step"] = step
        return result

    app.handle = tagged  # type: ignore[method-assign]
    server = serve(app)
    base_url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        run(app, base_url)
    finally:
        server.shutdown()
    capture = {
        "comment": "Recorded by test/tinker/capture_sdk.py: the official Tinker SDK against a recording fake server. Regenerate with test/tinker/capture.sh.",
        "sdk_version": VERSION,
        "python": platform.python_version(),
        "client_config": extra,
        "skipped": skipped,
        "observed": observed,
        "exchanges": app.records,
    }
    out.write_text(json.dumps(capture, indent=1, sort_keys=False) + "\n")
    print(f"tinker {VERSION}: {len(app.records)} exchanges -> {out}")


if __name__ == "__main__":
    main()
