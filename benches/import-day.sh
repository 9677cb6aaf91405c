#!/usr/bin/env bash
# A day of traffic through import and replay (issue 26, item 7): one ticket a second for 24 h,
# exported as instrumentation would (`run --otlp`, `--stripe-list`), then imported and replayed
# exactly. Prints wall time and peak memory of each step (GNU time). Figures: docs/performance.md.
#
#   benches/import-day.sh            # builds the release binary first
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -q
bin=target/release/refundsim
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
day=(scenarios/carrier-outage.json --set horizon=24h
  --set 'arrivals.schedule=[{"duration":"24h","rate_per_s":1}]')
step() {
  local what=$1
  shift
  /usr/bin/time -f "$what: %e s wall, %M KB peak" "$@" >/dev/null 2>"$dir/err" || {
    cat "$dir/err" >&2
    exit 1
  }
  tail -1 "$dir/err"
}
step "run + export" "$bin" run "${day[@]}" --otlp "$dir/day.otlp.json" --stripe-list "$dir/day.list.json"
ls -l "$dir"/day.* | awk '{print $5, $9}'
step "import" "$bin" import "$dir/day.otlp.json" "$dir/day.list.json" --base scenarios/carrier-outage.json --out "$dir/day.replay.json"
step "replay (exact)" "$bin" replay "$dir/day.otlp.json" "$dir/day.list.json" --base scenarios/carrier-outage.json
