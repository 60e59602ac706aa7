"""Has the official Tinker SDK read what libs/tinker-wire wrote, and reports what it made of it.

    sh test/tinker/python.sh 0.38.0 test/tinker/check_wire.py cases.json

cases.json (written by test/contracts/tinker-sdk.spec.ts) holds protobuf results and JSON answers our
package encoded, each with the values the SDK must read from them. Two paths:

- direct: the SDK's own deserializers (`tinker.proto.response_conv.deserialize_proto_response`, and
  `combine_fwd_bwd_output_results` for a request cut in chunks) and its pydantic response models;
- full: a real ServiceClient against the recording fake (fake_tinker_server.py) whose answers are
  replaced by ours, so the bytes go through the SDK's HTTP, Content-Type and polling code.

Prints one JSON object: {"sdk_version", "results": [{"name", "ok", "detail"}]}; exits 0 either way.
"""

from __future__ import annotations

import base64
import json
import math
import os
import sys
import traceback
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ["TINKER_TELEMETRY"] = "0"

import tinker  # noqa: E402
from tinker import types  # noqa: E402
from tinker.lib.chunked_fwdbwd_helpers import combine_fwd_bwd_output_results  # noqa: E402
from tinker.proto.response_conv import deserialize_proto_response  # noqa: E402

from fake_tinker_server import FakeTinker, serve  # noqa: E402

VERSION = tuple(int(x) for x in tinker.__version__.split(".")[:3])
results: list[dict[str, Any]] = []


def version_of(text: str | None) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(".")) if text else (0,)


def record(name: str, fn: Callable[[], str | None]) -> None:
    try:
        skipped = fn()
        results.append({"name": name, "ok": True, "detail": skipped or ""})
    except Exception as e:  # noqa: BLE001 - the report carries every failure
        results.append({"name": name, "ok": False, "detail": f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}"})


def same(actual: Any, expected: Any, where: str) -> None:
    """Equality with float tolerance (float32 round trips), NaN equal to NaN, None for None."""
    if isinstance(expected, float) or (isinstance(expected, int) and isinstance(actual, float)):
        a, e = float(actual), float(expected)
        if math.isnan(e):
            if not math.isnan(a):
                raise AssertionError(f"{where}: {a} is not NaN")
            return
        if abs(a - e) > 1e-6 * max(1.0, abs(e)):
            raise AssertionError(f"{where}: {a} != {e}")
        return
    if isinstance(expected, list):
        actual = list(actual) if actual is not None else None
        if actual is None or len(actual) != len(expected):
            raise AssertionError(f"{where}: {actual!r} has not the {len(expected)} items of {expected!r}")
        for i, (a, e) in enumerate(zip(actual, expected)):
            same(a, e, f"{where}[{i}]")
        return
    if isinstance(expected, dict):
        for k, e in expected.items():
            same(actual.get(k) if isinstance(actual, dict) else getattr(actual, k), e, f"{where}.{k}")
        return
    if actual != expected:
        raise AssertionError(f"{where}: {actual!r} != {expected!r}")


def tensor_view(td: Any) -> dict[str, Any]:
    return {"dtype": td.dtype, "shape": list(td.shape) if td.shape is not None else None, "data": td.tolist() if td.sparse_crow_indices is None else [float(x) for x in td._numpy.ravel().tolist()]}


def check_forward_backward_output(output: Any, expect: dict[str, Any], where: str) -> None:
    same(output.loss_fn_output_type, expect["loss_fn_output_type"], f"{where}.loss_fn_output_type")
    same(len(output.loss_fn_outputs), len(expect["outputs"]), f"{where}.len(loss_fn_outputs)")
    for i, (datum, exp) in enumerate(zip(output.loss_fn_outputs, expect["outputs"])):
        same(sorted(datum), sorted(exp), f"{where}.loss_fn_outputs[{i}] names")
        for name, e in exp.items():
            td = datum[name]
            same(td.dtype, e["dtype"], f"{where}[{i}].{name}.dtype")
            same(list(td.shape), e["shape"], f"{where}[{i}].{name}.shape")
            same([float(x) for x in td._numpy.ravel().tolist()], [float(x) for x in e["data"]], f"{where}[{i}].{name}.data")
    same(dict(output.metrics), expect["metrics"], f"{where}.metrics")


def check_sample_response(resp: Any, expect: dict[str, Any], where: str) -> None:
    same(len(resp.sequences), len(expect["sequences"]), f"{where}.len(sequences)")
    for i, (seq, e) in enumerate(zip(resp.sequences, expect["sequences"])):
        same(seq.stop_reason, e["stop_reason"], f"{where}.sequences[{i}].stop_reason")
        same(seq.tokens, e["tokens"], f"{where}.sequences[{i}].tokens")
        if e.get("logprobs") is None:
            same(seq.logprobs, None, f"{where}.sequences[{i}].logprobs")
        else:
            same(seq.logprobs, e["logprobs"], f"{where}.sequences[{i}].logprobs")
        if "topk_logprobs" in e and VERSION >= (0, 28):
            same([None if row is None else [list(c) for c in row] for row in seq.topk_logprobs], e["topk_logprobs"], f"{where}.sequences[{i}].topk_logprobs")
        if "sequence_id" in e and VERSION >= (0, 26):
            same(seq.sequence_id, e["sequence_id"], f"{where}.sequences[{i}].sequence_id")
    same(resp.prompt_logprobs, expect.get("prompt_logprobs"), f"{where}.prompt_logprobs")
    topk = resp.topk_prompt_logprobs
    same(None if topk is None else [None if row is None else [list(c) for c in row] for row in topk], expect.get("topk_prompt_logprobs"), f"{where}.topk_prompt_logprobs")
    if hasattr(resp, "prompt_cache_hit_tokens"):  # 0.23+
        same(resp.prompt_cache_hit_tokens, expect.get("prompt_cache_hit_tokens", 0), f"{where}.prompt_cache_hit_tokens")
    if "target_prompt_logprobs" in expect and VERSION >= (0, 30):
        td = resp.target_prompt_logprobs
        e = expect["target_prompt_logprobs"]
        same(list(td.shape), e["shape"], f"{where}.target_prompt_logprobs.shape")
        same(td.sparse_crow_indices, e.get("sparse_crow_indices"), f"{where}.target_prompt_logprobs.sparse_crow_indices")
        same(td.sparse_col_indices, e.get("sparse_col_indices"), f"{where}.target_prompt_logprobs.sparse_col_indices")
        same([float(x) for x in td._numpy.ravel().tolist()], e["data"], f"{where}.target_prompt_logprobs.data")


def direct(cases: dict[str, Any]) -> None:
    for case in cases.get("forward_backward_outputs", []):

        def run(case: dict[str, Any] = case) -> str | None:
            if VERSION < version_of(case.get("min_version")):
                return f"skipped: needs SDK {case['min_version']}"
            parts = [deserialize_proto_response(base64.b64decode(b), types.ForwardBackwardOutput) for b in case["chunks_base64"]]
            check_forward_backward_output(combine_fwd_bwd_output_results(parts), case["expect"], case["name"])
            return None

        record(f"direct: ForwardBackwardOutput {case['name']}", run)
    for case in cases.get("sample_responses", []):

        def run(case: dict[str, Any] = case) -> str | None:
            if VERSION < version_of(case.get("min_version")):
                return f"skipped: needs SDK {case['min_version']}"
            resp = deserialize_proto_response(base64.b64decode(case["base64"]), types.SampleResponse)
            check_sample_response(resp, case["expect"], case["name"])
            return None

        record(f"direct: SampleResponse {case['name']}", run)
    for case in cases.get("json", []):

        def run(case: dict[str, Any] = case) -> str | None:
            cls = getattr(types, case["type"], None)
            if cls is None:
                return f"skipped: tinker {tinker.__version__} has no types.{case['type']}"
            parsed = cls.model_validate(case["body"])
            if "expect" in case:
                same(parsed.model_dump(mode="json"), case["expect"], case["name"])
            return None

        record(f"direct: {case['type']} {case['name']}", run)


def full_path(cases: dict[str, Any]) -> None:
    full = cases.get("full_path")
    if not full:
        return
    app = FakeTinker(configs={"tml-wire-check": full.get("client_config", {})})
    app.overrides = {
        "forward_backward": [base64.b64decode(b) for b in full["forward_backward_base64"]],
        "asample": [base64.b64decode(b) for b in full["asample_base64"]],
        "optim_step": list(full["optim_step_results"]),
        "pending": list(full.get("pending", [])),
    }
    server = serve(app)
    try:
        sc = tinker.ServiceClient(base_url=f"http://127.0.0.1:{server.server_address[1]}", api_key="tml-wire-check")
        tc = sc.create_lora_training_client(base_model="Qwen/Qwen3-4B-Instruct-2507", rank=4)
        tc = tc.result() if type(tc).__name__.startswith("Backcompat") else tc

        def datums() -> list[types.Datum]:
            out = []
            for d in full["datums"]:
                n = len(d["target_tokens"])
                out.append(
                    types.Datum(
                        model_input=types.ModelInput.from_ints(d["tokens"]),
                        loss_fn_inputs={"target_tokens": types.TensorData(data=d["target_tokens"], dtype="int64", shape=[n]), "weights": types.TensorData(data=[1.0] * n, dtype="float32", shape=[n])},
                    )
                )
            return out

        def fwdbwd() -> None:
            check_forward_backward_output(tc.forward_backward(datums(), "cross_entropy").result(), full["forward_backward_expect"], "forward_backward")

        record("full path: forward_backward result (after our try_again answer)", fwdbwd)

        def optim_failed() -> None:
            try:
                tc.optim_step(types.AdamParams(learning_rate=1e-4)).result()
            except tinker.RequestFailedError as e:
                same(str(getattr(e.category, "value", e.category)), full["optim_step_category"], "RequestFailedError.category")
                return
            raise AssertionError("optim_step did not raise RequestFailedError")

        record("full path: a failed future raises RequestFailedError with its category", optim_failed)

        def optim_ok() -> None:
            same(tc.optim_step(types.AdamParams(learning_rate=1e-4)).result().metrics, full["optim_step_metrics"], "optim_step metrics")

        record("full path: optim_step JSON result", optim_ok)

        def sample() -> None:
            sampler = tc.save_weights_and_get_sampling_client()
            sampler = sampler.result() if type(sampler).__name__.startswith("Backcompat") else sampler
            s = full["sample"]
            resp = sampler.sample(
                prompt=types.ModelInput.from_ints(s["prompt"]),
                num_samples=s["num_samples"],
                sampling_params=types.SamplingParams(max_tokens=4),
                include_prompt_logprobs=True,
                topk_prompt_logprobs=s["topk_prompt_logprobs"],
            ).result()
            check_sample_response(resp, s["expect"], "sample")

        record("full path: asample result with sequence ids", sample)
        if hasattr(sc, "close"):
            sc.close("success").result()
    finally:
        server.shutdown()


def main() -> None:
    cases = json.loads(Path(sys.argv[1]).read_text())
    direct(cases)
    full_path(cases)
    print(json.dumps({"sdk_version": tinker.__version__, "results": results}))


if __name__ == "__main__":
    main()
