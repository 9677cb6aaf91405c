#!/usr/bin/env bash
# The default gate's cost (issue 27): `refundsim check` of one policy on the incident with no
# flags — the incident as written and under the policy, 30 seeds each, plus the bounded explore
# (256 cases) of the case that claims safety. Runs each command RUNS times (default 5) after a
# warm-up and prints every run's wall time and peak memory (GNU time), then the median wall
# time. Figures: docs/performance.md, "The default gate". The target is under 10 s on 2 cores.
#
#   benches/gate-default.sh            # builds the release binary first
#   RUNS=9 benches/gate-default.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -q
bin=target/release/refundsim
runs=${RUNS:-5}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
measure() {
  local what=$1
  shift
  "$@" >/dev/null 2>&1 || true # warm-up (a failing gate exits 1: that is still a measurement)
  local walls=()
  for _ in $(seq "$runs"); do
    local line
    /usr/bin/time -f "%e %M" -o "$tmp" "$@" >/dev/null 2>&1 || true
    line=$(tail -1 "$tmp")
    walls+=("${line%% *}")
    echo "$what: ${line%% *} s wall, ${line##* } KB peak"
  done
  printf '%s\n' "${walls[@]}" | sort -n | awk -v w="$what" '{a[NR]=$1} END {print w ": median " a[int((NR+1)/2)] " s over " NR " runs"}'
}
measure "check keys-and-probe (passes)" "$bin" check scenarios/carrier-outage.json --policy policies/keys-and-probe.json
measure "check fixed (asserted hole)" "$bin" check scenarios/carrier-outage.json --policy policies/fixed.json
measure "check 15 s, no key (fails in explore)" "$bin" check scenarios/carrier-outage.json --set executor.timeout=15s
measure "check every policy (.ci/run's gate)" sh -c "exec $bin check scenarios/ $(for p in policies/*.json; do printf -- '--policy %s ' "$p"; done)"
