"""Reads a job's TensorBoard event files and W&B offline run with the projects' own readers.

Usage: read_metrics.py TENSORBOARD_DIR WANDB_RUN_DIR  (either may be '-')
Prints JSON: {"tensorboard": {tag: [[step, value], ...]}, "wandb": {"records": [type, ...],
"run": {...}, "history": [{key: value}], "summary": {...}, "exit_code": n}}.
"""

import json
import os
import sys


def read_tensorboard(logdir):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(logdir, size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: [[e.step, e.value] for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def read_wandb(run_dir):
    from wandb.proto import wandb_internal_pb2
    from wandb.sdk.internal import datastore

    log = next(os.path.join(run_dir, n) for n in os.listdir(run_dir) if n.endswith(".wandb"))
    ds = datastore.DataStore()
    ds.open_for_scan(log)
    out = {"records": [], "history": [], "summary": {}, "exit_code": None, "run": None}
    while True:
        data = ds.scan_data()
        if data is None:
            break
        rec = wandb_internal_pb2.Record()
        rec.ParseFromString(data)
        kind = rec.WhichOneof("record_type")
        out["records"].append(kind)
        if kind == "history":
            row = {item.key: json.loads(item.value_json) for item in rec.history.item}
            row["__step_num"] = rec.history.step.num
            out["history"].append(row)
        elif kind == "summary":
            out["summary"].update({item.key: json.loads(item.value_json) for item in rec.summary.update})
        elif kind == "exit":
            out["exit_code"] = rec.exit.exit_code
        elif kind == "run":
            r = rec.run
            out["run"] = {
                "run_id": r.run_id,
                "project": r.project,
                "display_name": r.display_name,
                "start_time": r.start_time.seconds,
                "config": {item.key: json.loads(item.value_json) for item in r.config.update},
            }
    return out


def main():
    tb_dir, wandb_dir = sys.argv[1], sys.argv[2]
    print(json.dumps({
        "tensorboard": read_tensorboard(tb_dir) if tb_dir != "-" else None,
        "wandb": read_wandb(wandb_dir) if wandb_dir != "-" else None,
    }))


main()
