"""Checks that an SDK release installed with --no-deps under a folder (setup-sdk.sh) has every
requirement met by the virtualenv running this script, and is the release it should be."""

import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

folder, expected = Path(sys.argv[1]), sys.argv[2]
dist = next(metadata.distributions(path=[str(folder)], name="tinker"))
if dist.version != expected:
    sys.exit(f"{folder}: tinker {dist.version}, expected {expected}")
for line in dist.requires or []:
    req = Requirement(line)
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue
    try:
        installed = metadata.version(req.name)
    except metadata.PackageNotFoundError:
        sys.exit(f"tinker {expected} needs {req}, which is not installed")
    if not req.specifier.contains(installed, prereleases=True):
        sys.exit(f"tinker {expected} needs {req}, installed {req.name} {installed}")
print(f"tinker {expected}: requirements met")
