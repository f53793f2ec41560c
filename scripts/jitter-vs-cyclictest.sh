#!/usr/bin/env bash
# Wake-up latency of the runtime's control thread (`hil jitter`, A) against the OS floor
# (`cyclictest`, B), interleaved A B A B ... in the same window, for 1 kHz and 200 Hz, idle and
# under `stress-ng --cpu 2`; then deadline misses at 200 Hz idle over 60 s. Writes a table of
# medians and ratios to $OUT and every raw JSON/text output to $RAW.
#
# Both sides run the same way: SCHED_FIFO priority $PRIO, the measuring thread pinned to CPU $CPU
# (ours: --cpu, cyclictest: -a), mlockall (ours by default, cyclictest -m), /dev/cpu_dma_latency
# held at 0 (both by default), same period and duration. Main threads and stress-ng workers are
# not pinned. Needs root (SCHED_FIFO, mlockall) and `apt-get install -y rt-tests stress-ng`.
#
# Usage: scripts/jitter-vs-cyclictest.sh   (env: DURATION_S PAIRS PRIO CPU MISS_DURATION_S OUT RAW HIL)
# About 20 minutes with the defaults (5 pairs x 4 configurations x 2 x 25 s, plus 2 x 60 s).
set -euo pipefail

DURATION_S=${DURATION_S:-25}
PAIRS=${PAIRS:-5}
PRIO=${PRIO:-80}
CPU=${CPU:-1}
MISS_DURATION_S=${MISS_DURATION_S:-60}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
OUT=${OUT:-$CARGO_TARGET_DIR/figures.txt}
RAW=${RAW:-$CARGO_TARGET_DIR/jitter-raw}
# cyclictest histogram range, µs (1 µs buckets; anything above is counted as overflow).
HIST_US=20000

for tool in cyclictest stress-ng python3 cargo; do
    command -v "$tool" >/dev/null || { echo "missing $tool (apt-get install -y rt-tests stress-ng)" >&2; exit 2; }
done
mkdir -p "$RAW"
# HIL=/path/to/hil uses that binary instead of building one.
if [ -z "${HIL:-}" ]; then
    (cd "$ROOT" && cargo build --release -p hil --quiet)
    HIL=$CARGO_TARGET_DIR/release/hil
fi

STRESS_PID=
cleanup() { if [ -n "$STRESS_PID" ]; then kill "$STRESS_PID" 2>/dev/null || true; wait "$STRESS_PID" 2>/dev/null || true; fi; }
trap cleanup EXIT

log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }

for rate in 1000 200; do
    period_us=$((1000000 / rate))
    for load in idle stress; do
        if [ "$load" = stress ]; then
            # Ends by itself after the pairs even if this script is killed.
            stress-ng --cpu 2 --timeout $((PAIRS * 2 * (DURATION_S + 3) + 20))s --quiet &
            STRESS_PID=$!
            sleep 2
        fi
        for i in $(seq 1 "$PAIRS"); do
            tag=$rate-$load-$i
            # Load average before A and after B: other work on the machine shows up here.
            cut -d' ' -f1 /proc/loadavg > "$RAW/load-$tag.txt"
            log "A ours $tag"
            "$HIL" jitter --rate-hz "$rate" --duration-s "$DURATION_S" --priority "$PRIO" --cpu "$CPU" \
                --json "$RAW/ours-$tag.json" > "$RAW/ours-$tag.txt"
            log "B cyclictest $tag"
            cyclictest -m -p "$PRIO" -i "$period_us" -D "$DURATION_S" -q -a "$CPU" -h "$HIST_US" \
                --json="$RAW/ct-$tag.json" > "$RAW/ct-$tag.txt" 2>&1
            cut -d' ' -f1 /proc/loadavg >> "$RAW/load-$tag.txt"
        done
        cleanup
        STRESS_PID=
    done
done

log "deadline misses: 200 Hz idle, ${MISS_DURATION_S} s"
"$HIL" jitter --rate-hz 200 --duration-s "$MISS_DURATION_S" --priority "$PRIO" --cpu "$CPU" \
    --json "$RAW/miss-200-idle.json" > "$RAW/miss-200-idle.txt"
log "cyclictest reference for the same window: 200 Hz idle, ${MISS_DURATION_S} s"
cyclictest -m -p "$PRIO" -i 5000 -D "$MISS_DURATION_S" -q -a "$CPU" -h "$HIST_US" \
    --json="$RAW/ct-miss-200-idle.json" > "$RAW/ct-miss-200-idle.txt" 2>&1

python3 - "$RAW" "$PAIRS" "$DURATION_S" "$PRIO" "$CPU" > "$OUT" <<'PY'
import json, math, statistics, sys, os
raw, pairs, dur, prio, cpu = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]

def ct_percentiles(path):
    """Nearest-rank p50/p99 from cyclictest's 1 µs histogram; ranks in the overflow take max."""
    t = json.load(open(path))["thread"]["0"]
    hist = sorted((int(k), v) for k, v in t["histogram"].items())
    n = t["cycles"]
    def q(p):
        rank, seen = max(1, math.ceil(p * n)), 0
        for us, c in hist:
            seen += c
            if seen >= rank:
                return float(us)
        return float(t["max"])
    return q(0.50), q(0.99), float(t["max"]), n

print(f"# hil jitter (A) vs cyclictest (B), interleaved A B x {pairs}, {dur} s each,")
print(f"# SCHED_FIFO prio {prio}, measuring thread pinned to CPU {cpu} on both sides, mlockall,")
print(f"# /dev/cpu_dma_latency=0 on both. Kernel: {os.uname().release}. Wake-up latency in µs.")
print("# cyclictest reports whole µs (truncated); ours is ns-exact: 'floor' ratios truncate ours too.")
print()
print(f"{'config':<18}{'ours p50':>9}{'ours p99':>9}{'ct p50':>8}{'ct p99':>8}{'p50 ratio':>10}{'p99 ratio':>10}{'p99 ratio floor':>16}  target p99 ratio <= 1.3")
rows = []
for rate in (1000, 200):
    for load in ("idle", "stress"):
        o50, o99, c50, c99, per_run = [], [], [], [], []
        for i in range(1, pairs + 1):
            tag = f"{rate}-{load}-{i}"
            try:
                o = json.load(open(f"{raw}/ours-{tag}.json"))
                c = ct_percentiles(f"{raw}/ct-{tag}.json")
            except (OSError, KeyError, ValueError) as e:
                per_run.append(f"  {tag}: missing ({e})")
                continue
            try:
                load1 = "/".join(open(f"{raw}/load-{tag}.txt").read().split())
            except OSError:
                load1 = "?"
            w = o["wake_latency_us"]
            o50.append(w["p50"]); o99.append(w["p99"]); c50.append(c[0]); c99.append(c[1])
            per_run.append(f"  {tag}: ours p50 {w['p50']:.1f} p99 {w['p99']:.1f} max {w['max']:.0f} "
                           f"(fifo={o['sched_fifo']}, misses {o['deadline_misses']}, skipped {o['skipped_releases']}) | "
                           f"cyclictest p50 {c[0]:.0f} p99 {c[1]:.0f} max {c[2]:.0f} ({c[3]} cycles) | load1 before/after {load1}")
        if not o50:
            print(f"{rate} Hz {load:<10} no data"); rows += per_run; continue
        m = statistics.median
        mo50, mo99, mc50, mc99 = m(o50), m(o99), m(c50), m(c99)
        mo99f = m([math.floor(x) for x in o99])
        r = lambda a, b: f"{a / b:.2f}" if b > 0 else "n/a"
        verdict = "ok" if mc99 > 0 and mo99 / mc99 <= 1.3 else "MISSED"
        print(f"{str(rate) + ' Hz ' + load:<18}{mo50:>9.1f}{mo99:>9.1f}{mc50:>8.0f}{mc99:>8.0f}{r(mo50, mc50):>10}{r(mo99, mc99):>10}{r(mo99f, mc99):>16}  {verdict}")
        rows.append(f"{rate} Hz {load}:"); rows += per_run
print()
print("per run (medians above are over these):")
print("\n".join(rows))
print()
try:
    d = json.load(open(f"{raw}/miss-200-idle.json"))
    cu = d["compute_us"]; w = d["wake_latency_us"]
    print(f"200 Hz idle {d['duration_s']:.0f} s: ticks {d['ticks']}, deadline misses {d['deadline_misses']} (target 0), "
          f"skipped releases {d['skipped_releases']}, sched_fifo {d['sched_fifo']}")
    print(f"  wake-up latency µs: p50 {w['p50']:.1f} p99 {w['p99']:.1f} p99.9 {w['p999']:.1f} max {w['max']:.1f}")
    print(f"  tick compute time µs (servo on a simulated joint + exchange): p50 {cu['p50']:.2f} p99 {cu['p99']:.2f} max {cu['max']:.2f}")
except (OSError, KeyError, ValueError) as e:
    print(f"deadline-miss run missing: {e}")
try:
    t = json.load(open(f"{raw}/ct-miss-200-idle.json"))["thread"]["0"]
    hist = {int(k): v for k, v in t["histogram"].items()}
    overflow = t["cycles"] - sum(hist.values())
    late = sum(v for us, v in hist.items() if us >= 5000) + overflow
    print(f"  cyclictest right after, same settings, {t['cycles']} cycles: {late} wake-ups >= 5 ms late "
          f"(would be deadline misses even with zero compute), max {t['max']} µs")
except (OSError, KeyError, ValueError) as e:
    print(f"cyclictest reference for the deadline-miss run missing: {e}")
PY
log "wrote $OUT"
cat "$OUT"
