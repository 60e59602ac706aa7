"""OpenAI's official Python SDK against an OpenTinker server, as an OpenAI user would call it.

Run by test/e2e/openai-sdk.e2e-spec.ts (after test/clients/setup-clients.sh) with a server that has a
checkpoint `job:<id>/step-<n>` and an uploaded model `model:<id>` of one user, and a second user's key.
Each check prints one JSON line: {"check": name, "ok": true, ...what it saw} or {"ok": false, "error": …};
the script exits 1 when any check failed.

    python openai_sdk_checks.py --base-url http://127.0.0.1:8780/v1 --api-key otk_… --other-key otk_… \
        --job <job id> --step 2 --uploaded model:<id>
"""

import argparse
import json
import sys
import traceback

import openai
from openai import OpenAI

parser = argparse.ArgumentParser()
parser.add_argument("--base-url", required=True)
parser.add_argument("--api-key", required=True)
parser.add_argument("--other-key", required=True)
parser.add_argument("--job", required=True)
parser.add_argument("--step", required=True, type=int)
parser.add_argument("--uploaded", required=True)
args = parser.parse_args()

client = OpenAI(base_url=args.base_url, api_key=args.api_key, max_retries=0)
other = OpenAI(base_url=args.base_url, api_key=args.other_key, max_retries=0)
checkpoint = f"job:{args.job}/step-{args.step}"
latest = f"job:{args.job}"
failed = False


def check(fn):
    global failed
    try:
        seen = fn() or {}
        print(json.dumps({"check": fn.__name__, "ok": True, **seen}), flush=True)
    except Exception as error:  # noqa: BLE001 - every failure is reported, then the next check runs
        failed = True
        print(json.dumps({"check": fn.__name__, "ok": False, "error": f"{type(error).__name__}: {error}", "trace": traceback.format_exc()}), flush=True)


@check
def models_list():
    ids = [m.id for m in client.models.list()]
    assert checkpoint in ids, ids
    assert args.uploaded in ids, ids
    return {"ids": ids}


@check
def models_retrieve():
    by_step = client.models.retrieve(checkpoint)
    assert by_step.id == checkpoint and by_step.object == "model", by_step
    by_job = client.models.retrieve(latest)
    assert by_job.id == checkpoint, by_job
    uploaded = client.models.retrieve(args.uploaded)
    assert uploaded.id == args.uploaded, uploaded
    return {"owned_by": by_step.owned_by, "uploaded_owned_by": uploaded.owned_by}


@check
def completions_plain():
    c = client.completions.create(model=latest, prompt="12+30=", max_tokens=5, temperature=0)
    assert c.object == "text_completion" and c.model == checkpoint, c
    assert len(c.choices) == 1 and isinstance(c.choices[0].text, str), c
    assert c.choices[0].finish_reason in ("stop", "length"), c
    assert c.usage.total_tokens == c.usage.prompt_tokens + c.usage.completion_tokens, c.usage
    return {"text": c.choices[0].text, "usage": c.usage.model_dump()}


@check
def completions_streaming():
    whole = client.completions.create(model=checkpoint, prompt="1+1=", max_tokens=6, seed=7, temperature=1)
    text = ""
    last = None
    for chunk in client.completions.create(model=checkpoint, prompt="1+1=", max_tokens=6, seed=7, temperature=1, stream=True):
        assert chunk.object == "text_completion", chunk
        for choice in chunk.choices:
            text += choice.text
            last = choice.finish_reason or last
    assert text == whole.choices[0].text, (text, whole.choices[0].text)
    assert last == whole.choices[0].finish_reason, last
    return {"text": text}


@check
def completions_n_and_prompts():
    c = client.completions.create(model=checkpoint, prompt=["a", "b"], n=2, max_tokens=3, seed=1)
    assert [ch.index for ch in c.choices] == [0, 1, 2, 3], c.choices
    ids = client.completions.create(model=checkpoint, prompt=[[256, 97]], max_tokens=2, temperature=0)
    assert len(ids.choices) == 1 and ids.usage.prompt_tokens == 2, ids
    return {"choices": len(c.choices)}


@check
def completions_logprobs_echo():
    c = client.completions.create(model=checkpoint, prompt="hi", max_tokens=3, temperature=0, logprobs=2, echo=True)
    ch = c.choices[0]
    lp = ch.logprobs
    assert ch.text.startswith("hi"), ch.text
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == len(lp.text_offset), lp
    assert lp.token_logprobs[0] is None and lp.top_logprobs[0] is None, lp
    for i in range(1, len(lp.tokens)):
        top = lp.top_logprobs[i]
        assert 2 <= len(top) <= 3 and lp.tokens[i] in top, top
        assert lp.token_logprobs[i] <= 0
    return {"tokens": lp.tokens, "text_offset": lp.text_offset}


@check
def completions_stop():
    whole = client.completions.create(model=checkpoint, prompt="x", max_tokens=12, temperature=0).choices[0].text
    assert len(whole) > 5, whole
    stop = whole[3:5]
    c = client.completions.create(model=checkpoint, prompt="x", max_tokens=12, temperature=0, stop=[stop])
    assert c.choices[0].text == whole[: whole.index(stop)], (c.choices[0].text, whole, stop)
    assert c.choices[0].finish_reason == "stop"
    return {"stop": stop}


@check
def completions_uploaded_model():
    c = client.completions.create(model=args.uploaded, prompt="2+2=", max_tokens=3)
    assert c.model == args.uploaded, c
    return {}


@check
def chat_top_logprobs():
    c = client.chat.completions.create(
        model=checkpoint, messages=[{"role": "user", "content": "hi"}], max_tokens=4, temperature=0, logprobs=True, top_logprobs=5
    )
    content = c.choices[0].logprobs.content
    assert content, c
    for entry in content:
        assert len(entry.top_logprobs) == 5, entry
        assert entry.top_logprobs[0].token == entry.token, entry
        assert all(isinstance(t.bytes, list) for t in entry.top_logprobs)
    return {"tokens": [e.token for e in content]}


@check
def typed_errors():
    seen = {}
    try:
        client.completions.create(model="job:00000000-0000-4000-8000-000000000000", prompt="x")
        raise AssertionError("no error")
    except openai.NotFoundError as e:
        assert e.status_code == 404 and e.code == "OT_ERR_MODEL_NOT_FOUND" and e.param == "model" and e.type == "not_found_error", e.body
        seen["not_found"] = e.message
    try:
        client.completions.create(model=checkpoint, prompt="x", logprobs=6)
        raise AssertionError("no error")
    except openai.BadRequestError as e:
        assert e.status_code == 400 and e.param == "logprobs" and e.type == "invalid_request_error", e.body
    try:
        client.chat.completions.create(model=checkpoint, messages=[{"role": "user", "content": "x"}], logprobs=True, top_logprobs=21)
        raise AssertionError("no error")
    except openai.BadRequestError as e:
        assert e.param == "top_logprobs", e.body
    try:
        other.models.retrieve(args.uploaded)
        raise AssertionError("no error")
    except openai.NotFoundError as e:
        assert e.code == "OT_ERR_MODEL_NOT_FOUND", e.body
    try:
        OpenAI(base_url=args.base_url, api_key="otk_not_a_key", max_retries=0).models.list()
        raise AssertionError("no error")
    except openai.AuthenticationError as e:
        assert e.status_code == 401 and e.type == "authentication_error", e.body
    return seen


sys.exit(1 if failed else 0)
