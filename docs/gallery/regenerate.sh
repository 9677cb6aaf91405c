#!/usr/bin/env bash
# Regenerates docs/gallery/: the screenshots and excerpts that docs/report.md shows, each from
# a real run of the release binary on the shipped scenarios. From the repository root:
#
#   docs/gallery/regenerate.sh          (builds the release binary)
#   REFUNDSIM=path/to/refundsim docs/gallery/regenerate.sh
#
# GALLERY_OUT=DIR writes elsewhere; GALLERY_TEXT_ONLY=1 writes only the text excerpts (steps 1-3,
# what tests/it/docs_match.rs re-runs to check the committed ones are current).
#
# The PNGs need a headless Chromium (`chromium`, `chromium-browser` or `google-chrome` on PATH,
# or REFUNDSIM_CHROMIUM=/path); without one they are left as they are. The text excerpts are
# deterministic: tests/it/docs_match.rs checks that docs/report.md quotes them as they are.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ -n "${REFUNDSIM:-}" ]; then B=$REFUNDSIM; else
  cargo build --release -q
  B=target/release/refundsim
fi
out=${GALLERY_OUT:-docs/gallery}
mkdir -p "$out"
out=$(cd "$out" && pwd) # absolute: Chromium is given absolute paths
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
incident=scenarios/carrier-outage.json

# Exit 1 is a verdict (an expectation or a tolerance failed), not an error: keep its output.
verdict() { "$@" || [ $? -eq 1 ]; }

# 1. The run's summary and one duplicated ticket's story.
$B run "$incident" >"$out/run.txt"
$B run "$incident" --ticket 49417 --story-only >"$out/story.txt"

# 2. The gate: a candidate that keys refunds per ticket but leaves the humans' dashboard
#    refunds unkeyed (what `refundsim fix` finds on the incident), as text and as JUnit.
verdict $B check "$incident" --set refunds_service.idempotency_key=per_ticket --seeds 1..30 \
  --explore-cases 0 --junit "$out/check.junit.xml" >"$out/check.txt"

# 3. diff: a candidate that drops all but the key from the fixed policy, on the same seeds.
verdict $B diff "$incident" --baseline policies/fixed.json --candidate policies/key-only.json \
  --seeds 1..10 --explore-cases 0 >"$out/diff.txt"

if [ "${GALLERY_TEXT_ONLY:-}" = 1 ]; then exit 0; fi

# 4. A sweep: its plots and the narrow summary.csv.
verdict $B sweep "$incident" --set horizon=40m --vary executor.timeout=5s,8s,10s,15s,20s,30s \
  --vary refunds_service.pool_size=2..5 --seeds 1..6 --out "$tmp/sweep" >"$tmp/sweep.txt"
# The temporary directory's name, as the command line gave it: `sweep`.
sed "s|$tmp/sweep|sweep|g" "$tmp/sweep.txt" >"$out/sweep.txt"
cp "$tmp/sweep/p_duplicate.svg" "$tmp/sweep/duplicates.svg" \
  "$tmp/sweep/latency-executor.timeout.svg" "$out/"
if [ -f "$tmp/sweep/summary.csv" ]; then cp "$tmp/sweep/summary.csv" "$out/"; fi

# 5. The HTML report as a browser shows it: the header and summary, and the charts alone.
chromium=${REFUNDSIM_CHROMIUM:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}
if [ -z "$chromium" ]; then
  echo "no headless Chromium: the PNGs in $out are left as they are" >&2
  exit 0
fi
$B report "$incident" --out "$tmp/incident.html" >/dev/null
shot() { # PAGE PNG HEIGHT
  "$chromium" --headless --disable-gpu --no-sandbox --disable-dev-shm-usage --hide-scrollbars \
    --user-data-dir="$tmp/profile" --window-size=1200,"$3" --virtual-time-budget=5000 \
    --screenshot="$2" "file://$1" 2>"$tmp/chromium.log" || true
  if [ ! -s "$2" ]; then
    echo "Chromium wrote no $2:" >&2
    cat "$tmp/chromium.log" >&2
    exit 1
  fi
}
rm -f "$out/report-header.png" "$out/report-charts.png"
shot "$tmp/incident.html" "$out/report-header.png" 820
# The charts alone: the same page with every other part hidden (inline styles are allowed by
# the page's Content-Security-Policy).
sed 's|</head>|<style>header, footer, main > section:not(#timelines), #timelines > p, #timelines details { display: none } body { padding-top: 0 }</style></head>|' \
  "$tmp/incident.html" >"$tmp/charts.html"
shot "$tmp/charts.html" "$out/report-charts.png" 1360
echo "regenerated $out"
