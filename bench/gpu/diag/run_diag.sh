#!/usr/bin/env bash
# One short GPU call: where big_matmul's recorded steps went (bench/gpu/diag/sitecustomize.py), and the live
# fixture tests again.  Results under $OUT.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
for run in 1 2 3; do
    extra=()
    [ "$run" = 3 ] && extra=(--python-frames off)
    TT_DIAG_OUT="$OUT/diag$run.json" PYTHONPATH="$PWD/bench/gpu/diag:$PWD/server:/tmp/site" timeout 120 \
        python3 -m torchtriage profile --device cuda --quiet "${extra[@]}" --out "/tmp/diag/run$run" examples/big_matmul.py -- --steps 40
    echo "run $run: rc=$?"
done
mkdir -p /tmp/diag/live
TORCHTRIAGE_LIVE_OUT=/tmp/diag/live PYTHONPATH="$PWD/server:/tmp/site" timeout 200 python3 -m pytest -m cuda -p no:cacheprovider -q -rA \
    tests/runtime/cuda -k "adam_memory or grad_scaler or tensor_core or big_matmul" 2>&1 | tail -25
tar czf "$OUT/diag_runs.tar.gz" -C /tmp/diag .
