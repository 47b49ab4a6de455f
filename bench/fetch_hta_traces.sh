#!/usr/bin/env bash
# The four largest real GPU traces in HolisticTraceAnalysis's test data (MIT licence, commit below),
# for bench/analyze_hta_bench.py --source: V100 and A100 training traces of 13-46 MB (uncompressed).
# They are fetched, never kept in this repository.  Usage: bash bench/fetch_hta_traces.sh [DIR]
set -euo pipefail
dir=${1:-/tmp/hta-traces}
commit=f4d0062c382f42bd8a74838bcdad1916c7d5d2da
base=https://raw.githubusercontent.com/facebookresearch/HolisticTraceAnalysis/$commit/tests/data
mkdir -p "$dir"
for path in df_index_resolver/df_index_resolver.json.gz trace_diff/control/control.json.gz \
            negative_queue_length_values_check/rank0.json.gz ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz; do
  out="$dir/$(echo "$path" | tr / _)"
  [ -s "$out" ] || curl -fsSL "$base/$path" -o "$out"
  echo "$out"
done
