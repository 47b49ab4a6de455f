#!/usr/bin/env bash
# The GPU session, run on the GPU machine from the repository root (the `device` tool):
#   bash bench/gpu/run.sh            # BUDGET=380 seconds before packing, results under $OUT
# It installs the carried wheels (.whl/: libcst, which the machine lacks) into /tmp/site,
# runs torchtriage from the working tree, and packs what bench/gpu/session.py gathers.
set -u
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
fi
export PYTHONPATH="$PWD/server:/tmp/site${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
nvidia-smi -L || true
python3 bench/gpu/session.py --out "${OUT:?OUT names the folder for the results}" --budget "${BUDGET:-380}" "$@"
