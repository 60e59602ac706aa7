"""A recording fake of the Tinker service: answers the least the official SDK needs and records
every exchange (method, path, the headers that carry meaning, request and answer bodies).

Test-only. It builds its protobuf answers with the SDK's own generated module
(`tinker.proto.tinker_public_pb2`), so what it sends is independent of libs/tinker-wire, and it
decodes the SDK's protobuf requests the same way, storing both the raw bytes and protobuf's own
JSON view of them. Run it inside an SDK virtualenv (see setup-sdk.sh); capture_sdk.py drives it.

Deterministic by design: ids count up from 1 per server, results are functions of the request.
"""

from __future__ import annotations

import base64
import json
import math
import re
import struct
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import zstandard
from google.protobuf.json_format import MessageToDict
from tinker.proto import tinker_public_pb2 as pb

# Headers whose values a server may act on; their values are recorded as sent, except the ones
# that change from run to run, which are recorded as a pattern.
MEANINGFUL_HEADERS = {
    "accept",
    "content-type",
    "content-encoding",
    "x-api-key",
    "x-idempotency-key",
    "x-sdk-version",
    "x-sdk-method",
    "x-tinker-request-type",
    "x-tinker-request-iteration",
    "x-tinker-sampling-backpressure",
    "x-tinker-weights-access-token",
    "x-stainless-retry-count",
    "x-stainless-read-timeout",
    "x-stainless-lang",
    "x-stainless-package-version",
}
VOLATILE = [
    (re.compile(r"stainless-python-retry-[0-9a-f-]{36}"), "stainless-python-retry-<uuid>"),
    (re.compile(r"^\d+(\.\d+)?$"), None),  # numbers are kept as they are
]
TRANSPORT_HEADERS = {"host", "content-length", "connection", "accept-encoding", "user-agent", "x-tinker-create-promise-roundtrip-time"}

BASE_MODEL = "Qwen/Qwen3-4B-Instruct-2507"


def _mask(name: str, value: str) -> str:
    if name == "x-tinker-create-promise-roundtrip-time":
        return "<seconds>"
    for pattern, replacement in VOLATILE:
        if replacement is not None:
            value = pattern.sub(replacement, value)
    return value


def _f32(values: list[float]) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


def _i32(values: list[int]) -> bytes:
    return struct.pack(f"<{len(values)}i", *values)


def _i64(values: list[int]) -> bytes:
    return struct.pack(f"<{len(values)}q", *values)


class Future:
    def __init__(self, request_type: str, result: Any, *, try_again: list[Any] | None = None):
        self.request_type = request_type
        # JSON dict, protobuf message, protobuf bytes, or ("error", message, category)
        self.result = result
        # Answers given before the result, one per poll: ("try_again", queue_state), ("http408",),
        # or ("json", status, body) as given.
        self.pending = list(try_again or [])


class FakeTinker:
    """The service's state and routes. `configs` maps an API key to its client config answer."""

    def __init__(self, configs: dict[str, dict[str, Any]] | None = None, strip_telemetry: bool = True):
        self.configs = configs or {}
        self.strip_telemetry = strip_telemetry
        self.lock = threading.Lock()
        self.records: list[dict[str, Any]] = []
        self.futures: dict[str, Future] = {}
        self.counters: dict[str, int] = {}
        self.sessions: dict[str, dict[str, Any]] = {}
        self.models: dict[str, dict[str, Any]] = {}
        self.samplers: dict[str, dict[str, Any]] = {}
        self.checkpoints: dict[str, list[dict[str, Any]]] = {}
        self.deleted: list[str] = []
        self.finished: dict[str, Any] = {}
        # Answers to use instead of the fake's own, consumed in order: "forward_backward" and "asample"
        # take protobuf result bytes, "optim_step" a JSON result, "pending" a JSON answer to the first
        # poll of the next future (check_wire.py feeds libs/tinker-wire's encodings through these).
        self.overrides: dict[str, list[Any]] = {}

    # ---- ids -------------------------------------------------------------------------------
    def _next(self, kind: str) -> int:
        self.counters[kind] = self.counters.get(kind, 0) + 1
        return self.counters[kind]

    def _override(self, kind: str) -> Any:
        queue = self.overrides.get(kind)
        return queue.pop(0) if queue else None

    def _future(self, fut: Future, **extra: Any) -> dict[str, Any]:
        pending = self._override("pending")
        if pending is not None:
            fut.pending = [("json", 200, pending)]
        request_id = f"req-{self._next('request')}"
        self.futures[request_id] = fut
        return {"request_id": request_id, **extra}

    # ---- dispatch --------------------------------------------------------------------------
    def handle(self, method: str, raw_path: str, headers: dict[str, str], body: bytes):
        url = urlsplit(raw_path)
        path = url.path
        query = {k: v if len(v) > 1 else v[0] for k, v in parse_qs(url.query).items()}
        record: dict[str, Any] = {
            "method": method,
            "path": path,
            "headers": {k: _mask(k, v) for k, v in sorted(headers.items()) if k in MEANINGFUL_HEADERS},
            "other_headers": sorted(k for k in headers if k not in MEANINGFUL_HEADERS and k not in TRANSPORT_HEADERS),
        }
        if "x-tinker-create-promise-roundtrip-time" in headers:
            record["headers"]["x-tinker-create-promise-roundtrip-time"] = "<seconds>"
        if query:
            record["query"] = query
        parsed: Any = None
        if body:
            ctype = headers.get("content-type", "")
            if ctype.startswith("application/x-protobuf"):
                raw = body
                if headers.get("content-encoding") == "zstd":
                    raw = zstandard.ZstdDecompressor().decompress(body)
                msg = pb.ForwardBackwardRequest()
                msg.ParseFromString(raw)
                parsed = msg
                record["body_base64"] = base64.b64encode(body).decode()
                record["body_proto"] = MessageToDict(msg, preserving_proto_field_name=True)
            else:
                parsed = json.loads(body)
                record["body"] = parsed
                if path == "/api/v1/telemetry" and self.strip_telemetry:
                    # Events hold timings and tracebacks: keep their shape only.
                    record["body"] = {
                        "keys": sorted(parsed),
                        "event_names": sorted({e.get("event_name") or e.get("event", "?") for e in parsed.get("events", [])}),
                    }
        with self.lock:
            status, answer, ctype = self.route(method, path, query, headers, parsed)
        record["status"] = status
        if isinstance(answer, (bytes, bytearray)):
            record["response_content_type"] = ctype
            record["response_base64"] = base64.b64encode(answer).decode()
            payload = bytes(answer)
        else:
            record["response"] = answer
            payload = json.dumps(answer).encode() if answer is not None else b""
            ctype = "application/json"
        with self.lock:
            self.records.append(record)
        return status, ctype, payload

    def route(self, method: str, path: str, query: dict[str, Any], headers: dict[str, str], body: Any):
        key = headers.get("x-api-key", "")
        p = path.removeprefix("/api/v1/")
        if method == "GET" and p == "healthz":
            return 200, {"status": "ok"}, None
        if method == "POST" and p == "client/config":
            return 200, self.configs.get(key, {}), None
        if method == "POST" and p == "client/dynamic_config":
            return 200, {"refresh_interval_sec": 300}, None
        if method == "POST" and p == "telemetry":
            return 200, {"status": "accepted"}, None
        if method == "POST" and p == "create_session":
            session_id = f"session-{self._next('session')}"
            self.sessions[session_id] = {"key": key, "body": body}
            return 200, {"session_id": session_id, "type": "create_session", "info_message": "fake tinker: recording"}, None
        if method == "POST" and p == "session_heartbeat":
            if body["session_id"] in self.finished:
                return 410, {"detail": "session finished"}, None
            return 200, {"type": "session_heartbeat"}, None
        m = re.fullmatch(r"sessions/([^/]+)/finish", p)
        if method == "POST" and m:
            self.finished[m.group(1)] = body
            return 200, {}, None
        if method == "GET" and p == "get_server_capabilities":
            return 200, {"supported_models": [{"model_name": BASE_MODEL, "max_context_length": 32768, "trainable": True, "sampleable": True}, {"model_name": "Qwen/Qwen3-8B"}]}, None
        if method == "POST" and p == "create_model":
            return self.create_model(body)
        if method == "POST" and p == "get_info":
            model = self.models.get(body["model_id"])
            if model is None:
                return 404, {"detail": f"model {body['model_id']} not found"}, None
            return 200, {
                "model_id": body["model_id"],
                "model_data": {"arch": "qwen3", "model_name": model["base_model"], "tokenizer_id": model["base_model"]},
                "is_lora": True,
                "lora_rank": model["rank"],
                "model_name": model["base_model"],
                "type": "get_info",
            }, None
        if method == "POST" and p == "forward_backward":
            if not isinstance(body, pb.ForwardBackwardRequest):
                # SDKs before 0.25 send JSON unless the client config asks for protobuf: a 4xx stops them at once.
                return 415, {"detail": "forward_backward takes protobuf; answer client/config with proto_write_fwdbwd and fwd_via_fwdbwd"}, None
            return self.forward_backward(body)
        if method == "POST" and p == "optim_step":
            return self.optim_step(body)
        if method == "POST" and p == "save_weights":
            path_ = f"tinker://{body['model_id']}/weights/{body['path']}"
            self._checkpoint(body["model_id"], "training", body["path"], path_)
            return 200, self._future(Future("SaveWeights", {"path": path_, "type": "save_weights"})), None
        if method == "POST" and p == "save_weights_for_sampler":
            if body.get("path"):
                path_ = f"tinker://{body['model_id']}/sampler_weights/{body['path']}"
                self._checkpoint(body["model_id"], "sampler", body["path"], path_)
                result = {"path": path_, "type": "save_weights_for_sampler"}
            else:
                session_id = body["model_id"].split(":")[0]
                sampler_id = f"{session_id}:sample:{body['sampling_session_seq_id']}"
                self.samplers[sampler_id] = {"base_model": self.models[body["model_id"]]["base_model"], "model_path": None}
                result = {"sampling_session_id": sampler_id, "type": "save_weights_for_sampler"}
            return 200, self._future(Future("SaveWeightsForSampler", result)), None
        if method == "POST" and p == "load_weights":
            return self.load_weights(body)
        if method == "POST" and p == "create_sampling_session":
            sampler_id = f"{body['session_id']}:sample:{body['sampling_session_seq_id']}"
            base = body.get("base_model") or BASE_MODEL
            self.samplers[sampler_id] = {"base_model": base, "model_path": body.get("model_path")}
            return 200, {"sampling_session_id": sampler_id, "type": "create_sampling_session"}, None
        m = re.fullmatch(r"samplers/(.+)", p)
        if method == "GET" and m:
            sampler_id = unquote(m.group(1))
            sampler = self.samplers.get(sampler_id)
            if sampler is None:
                return 404, {"detail": "sampler not found"}, None
            return 200, {"sampler_id": sampler_id, **sampler}, None
        if method == "POST" and p == "asample":
            return self.asample(body)
        if method == "POST" and p == "retrieve_future":
            return self.retrieve_future(body, headers)
        if method == "POST" and p == "weights_info":
            model_id = body["tinker_path"].removeprefix("tinker://").split("/")[0]
            model = self.models.get(model_id, {"base_model": BASE_MODEL, "rank": 8})
            return 200, {"base_model": model["base_model"], "is_lora": True, "lora_rank": model["rank"], "train_attn": True, "train_mlp": True, "train_unembed": False}, None
        if method == "GET" and p == "training_runs":
            runs = [self._training_run(model_id) for model_id in sorted(self.models)]
            return 200, {"training_runs": runs, "cursor": {"offset": 0, "limit": 20, "total_count": len(runs)}}, None
        m = re.fullmatch(r"training_runs/([^/]+)", p)
        if method == "GET" and m:
            model_id = unquote(m.group(1))
            if model_id not in self.models:
                return 404, {"detail": "training run not found"}, None
            return 200, self._training_run(model_id), None
        m = re.fullmatch(r"training_runs/([^/]+)/checkpoints", p)
        if method == "GET" and m:
            model_id = unquote(m.group(1))
            return 200, {"checkpoints": self.checkpoints.get(model_id, [])}, None
        m = re.fullmatch(r"training_runs/([^/]+)/checkpoints/(weights|sampler_weights)/([^/]+)", p)
        if method == "DELETE" and m:
            model_id, kind, name = unquote(m.group(1)), m.group(2), unquote(m.group(3))
            listed = self.checkpoints.get(model_id, [])
            kept = [c for c in listed if c["checkpoint_id"] != f"{kind}/{name}"]
            if len(kept) == len(listed):
                return 404, {"detail": "checkpoint not found"}, None
            self.checkpoints[model_id] = kept
            self.deleted.append(f"tinker://{model_id}/{kind}/{name}")
            return 200, None, None
        if method == "GET" and p == "checkpoints":
            allc = [c for model_id in sorted(self.checkpoints) for c in self.checkpoints[model_id]]
            return 200, {"checkpoints": allc, "cursor": {"offset": 0, "limit": 100, "total_count": len(allc)}}, None
        return 404, {"detail": f"fake tinker: no route {method} {path}"}, None

    # ---- models and training ---------------------------------------------------------------
    def create_model(self, body: dict[str, Any]):
        rank = body.get("lora_config", {}).get("rank", 32)
        if rank < 1:
            # A user error at submission: a 4xx with a body makes the SDK raise at once.
            return 400, {"detail": f"lora_config.rank must be at least 1, got {rank}"}, None
        model_id = f"{body['session_id']}:train:{body['model_seq_id']}"
        self.models[model_id] = {"base_model": body["base_model"], "rank": rank, "lora_config": body.get("lora_config")}
        fut = Future("CreateModel", {"model_id": model_id, "type": "create_model"}, try_again=[("try_again", "paused_capacity")])
        return 200, self._future(fut, model_id=model_id), None

    def load_weights(self, body: dict[str, Any]):
        if body.get("session_id") is not None:
            model_id = f"{body['session_id']}:train:{body['model_seq_id']}"
            source = body["path"].removeprefix("tinker://").split("/")[0]
            base = self.models.get(source, {}).get("base_model", BASE_MODEL)
            self.models[model_id] = {"base_model": base, "rank": self.models.get(source, {}).get("rank", 8), "loaded_from": body["path"]}
        else:
            model_id = body["model_id"]
        result = {"path": body["path"], "model_id": model_id, "type": "load_weights"}
        return 200, self._future(Future("LoadWeights", result), model_id=model_id), None

    def forward_backward(self, msg: pb.ForwardBackwardRequest):
        """Per datum: logprobs[i] = -(target_i + 1) / 100 and elementwise_loss = -weight·logprob
        (or -advantage for the RL losses); `loss:sum` sums them. Output dtypes vary on purpose."""
        outputs = pb.ForwardBackwardOutput(loss_fn_output_type="ArrayRecord")
        record = outputs.loss_fn_outputs.add(type_tag="ArrayRecord", num_datums=len(msg.data))
        lp_data, lp_off, el_data, el_off = [], [0], [], [0]
        total = 0.0
        for datum in msg.data:
            tgt = datum.loss_fn_inputs["target_tokens"]
            targets = list(struct.unpack(f"<{len(tgt.dense) // 8}q", tgt.dense)) if tgt.HasField("dense") else list(struct.unpack(f"<{len(tgt.sparse_csr.values) // 8}q", tgt.sparse_csr.values))
            lps = [-(t + 1) / 100 for t in targets]
            if "weights" in datum.loss_fn_inputs and datum.loss_fn_inputs["weights"].HasField("dense"):
                w = datum.loss_fn_inputs["weights"].dense
                weights = list(struct.unpack(f"<{len(w) // 4}f", w))
            else:
                weights = [1.0] * len(lps)
            if "advantages" in datum.loss_fn_inputs:
                a = datum.loss_fn_inputs["advantages"].dense
                adv = list(struct.unpack(f"<{len(a) // 4}f", a))
                losses = [-x for x in adv]
            else:
                losses = [-wi * lp for wi, lp in zip(weights, lps)]
            total += sum(losses)
            lp_data += lps
            lp_off.append(lp_off[-1] + 4 * len(lps))
            el_data += losses
            el_off.append(el_off[-1] + 4 * len(losses))
        record.fields["logprobs"].CopyFrom(pb.BatchedTensor(data=_f32(lp_data), offsets=_i64(lp_off), dtype=pb.DTYPE_FLOAT32))
        record.fields["elementwise_loss"].CopyFrom(pb.BatchedTensor(data=_f32(el_data), offsets=_i64(el_off), dtype=pb.DTYPE_FLOAT32))
        outputs.metrics["loss:sum"] = total
        outputs.metrics["datums:sum"] = float(len(msg.data))
        kind = "Forward" if msg.forward_only else "ForwardBackward"
        pending = [("http408",)] if msg.forward_only else [("try_again", "active")]
        result = self._override("forward_backward") or outputs
        return 200, self._future(Future(kind, result, try_again=pending), model_id=msg.model_id), None

    def optim_step(self, body: dict[str, Any]):
        params = body.get("adam_params") or body.get("optim_params") or {}
        if params.get("learning_rate", 0) < 0:
            fut = Future("OptimStep", ("error", f"learning_rate must be non-negative, got {params['learning_rate']}", "user"))
        else:
            fut = Future("OptimStep", {"metrics": {"grad_norm:mean": 0.5, "learning_rate:mean": params.get("learning_rate", 0)}})
        override = self._override("optim_step")
        if override is not None:
            fut.result = override
        return 200, self._future(fut, model_id=body["model_id"]), None

    def _checkpoint(self, model_id: str, kind: str, name: str, path: str):
        folder = "weights" if kind == "training" else "sampler_weights"
        self.checkpoints.setdefault(model_id, []).append(
            {"checkpoint_id": f"{folder}/{name}", "checkpoint_type": kind, "time": "2026-12-05T12:00:00Z", "tinker_path": path, "size_bytes": 1234, "public": False}
        )

    def _training_run(self, model_id: str) -> dict[str, Any]:
        model = self.models[model_id]
        return {
            "training_run_id": model_id,
            "base_model": model["base_model"],
            "model_owner": "fake-user",
            "is_lora": True,
            "corrupted": False,
            "lora_rank": model["rank"],
            "last_request_time": "2026-12-05T12:00:00Z",
        }

    # ---- sampling --------------------------------------------------------------------------
    def asample(self, body: dict[str, Any]):
        """Sample i: tokens last_prompt + 1 + i + j (j < max_tokens), logprob -(j + 1) / 10;
        stop reason `stop` when stop token ids were given, else `length`. prompt_logprobs:
        NaN then -k / 10; top-k prompt logprobs when asked."""
        prompt = [t for c in body["prompt"]["chunks"] for t in c.get("tokens", [])]
        params = body["sampling_params"]
        n = body.get("num_samples", 1)
        max_tokens = params.get("max_tokens") or 4
        stop = params.get("stop")
        resp = pb.SampleResponse()
        for i in range(n):
            toks = [prompt[-1] + 1 + i + j for j in range(max_tokens)]
            reason = pb.STOP_REASON_LENGTH
            if isinstance(stop, list) and stop and isinstance(stop[0], int):
                toks[-1] = stop[0]
                reason = pb.STOP_REASON_STOP
            seq = resp.sequences.add(stop_reason=reason, tokens=_i32(toks), logprobs=_f32([-(j + 1) / 10 for j in range(max_tokens)]))
            k = body.get("topk_sample_logprobs") or 0
            if k:
                seq.topk_sampled_logprobs.CopyFrom(pb.TopkLogprobs(token_ids=_i32([t + c for t in toks for c in range(k)]), logprobs=_f32([-(c + 1) / 10 for _ in toks for c in range(k)]), k=k, length=len(toks)))
        if body.get("prompt_logprobs"):
            resp.prompt_logprobs = _f32([math.nan] + [-(i + 1) / 10 for i in range(len(prompt) - 1)])
        k = body.get("topk_prompt_logprobs") or 0
        if k:
            # Written through field numbers only, so the same bytes suit SDKs that call this
            # message TopkPromptLogprobs(prompt_length) and those that call it TopkLogprobs(length).
            topk = resp.topk_prompt_logprobs
            topk.token_ids = _i32([t + c for t in prompt for c in range(k)])
            topk.logprobs = _f32([-(c + 1) / 10 for _ in prompt for c in range(k)])
            topk.k = k
            setattr(topk, "length" if "length" in topk.DESCRIPTOR.fields_by_name else "prompt_length", len(prompt))
        target = body.get("target_prompt_logprobs")
        if target:
            # One logprob per named id, -id / 100, in the layout the ids came in.
            ids = target["data"]
            values = _f32([-i / 100 for i in ids])
            tensor = resp.target_prompt_logprobs
            tensor.dtype = pb.DTYPE_FLOAT32
            tensor.shape.extend(target["shape"])
            if target.get("sparse_crow_indices") is not None:
                tensor.sparse_csr.values = values
                tensor.sparse_csr.crow_indices = _i64(target["sparse_crow_indices"])
                tensor.sparse_csr.col_indices = _i64(target["sparse_col_indices"])
            else:
                tensor.dense = values
        sequence_ids = [f"{body['sampling_session_id']}:seq:{body['seq_id']}:{i}" for i in range(n)]
        result = self._override("asample") or resp
        return 200, self._future(Future("Sample", result, try_again=[("try_again", "paused_rate_limit")]), sample_sequence_ids=sequence_ids), None

    # ---- futures ---------------------------------------------------------------------------
    def retrieve_future(self, body: dict[str, Any], headers: dict[str, str]):
        fut = self.futures.get(body["request_id"])
        if fut is None:
            return 404, {"detail": f"unknown request {body['request_id']}"}, None
        if fut.pending:
            step = fut.pending.pop(0)
            if step[0] == "http408":
                return 408, {"type": "try_again", "request_id": body["request_id"], "queue_state": "active"}, None
            if step[0] == "json":
                return step[1], step[2], None
            return 200, {"type": "try_again", "request_id": body["request_id"], "queue_state": step[1]}, None
        result = fut.result
        if isinstance(result, tuple) and result[0] == "error":
            return 200, {"error": result[1], "category": result[2]}, None
        if isinstance(result, dict):
            return 200, result, None
        if isinstance(result, (bytes, bytearray)):
            return 200, bytes(result), "application/x-protobuf"
        return 200, result.SerializeToString(), "application/x-protobuf"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _serve(self):
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        status, ctype, payload = self.server.app.handle(self.command, self.path, headers, body)  # type: ignore[attr-defined]
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


def serve(app: FakeTinker, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer((host, port), _Handler)
    server.daemon_threads = True
    server.app = app  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
