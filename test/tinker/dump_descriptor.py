"""Prints the protobuf schema embedded in the installed SDK (tinker/proto/tinker_public_pb2.py) as JSON:
{message: {field: {"number", "type", "label", "type_name"}}, enum: {value: number}}, for comparing with
libs/tinker-wire's proto/tinker.proto (test/contracts/tinker-sdk.spec.ts)."""

import json

from google.protobuf import descriptor_pb2
from tinker.proto import tinker_public_pb2

fd = descriptor_pb2.FileDescriptorProto()
tinker_public_pb2.DESCRIPTOR.CopyToProto(fd)
out = {"messages": {}, "enums": {}}
for m in fd.message_type:
    maps = {n.name: n for n in m.nested_type if n.options.map_entry}
    fields = {}
    for f in m.field:
        entry = maps.get(f.type_name.rsplit(".", 1)[-1]) if f.type_name else None
        if entry is not None:
            key, value = entry.field
            fields[f.name] = {"number": f.number, "map": [key.type, value.type, value.type_name.rsplit(".", 1)[-1]]}
        else:
            fields[f.name] = {"number": f.number, "type": f.type, "repeated": f.label == 3, "type_name": f.type_name.rsplit(".", 1)[-1]}
    out["messages"][m.name] = fields
for e in fd.enum_type:
    out["enums"][e.name] = {v.name: v.number for v in e.value}
print(json.dumps(out))
