#!/usr/bin/env bash
# Curio's own PoRep requests on the GPU host (issue 37): real 2 KiB and
# 8 MiB sectors (filecoin-proofs' PC1/PC2/C1 for miner f01000, random Groth16
# parameters generated here) sent exactly as Curio sends them
# (scripts/curio_client_check.py) to `porep-c2 serve` on the GPU, every proof
# verified; on the 2 KiB daemon a fault drill makes the first attempt fail
# (GPU fault, no CPU retry) and Curio's retry with the same id is proved.
# Then the 8 MiB user path's throughput: `porep-c2 bench --c1` in-process and
# the same load through a daemon, beside the runner's witness-path figure.
# Usage: scripts/curio_device_check.sh BIN_DIR STUBS_DIR OUT_DIR [C] [J]
set -uo pipefail
B=$1; S=$2; O=$3; C=${4:-16}; J=${5:-64}
W=${W:-/tmp/porep-c2-curio}; P=$W/params
mkdir -p "$W" "$P" "$O"
export RUST_LOG=${RUST_LOG:-info}
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$O/summary.txt"; }

# BENCH_ONLY=1: the 8 MiB throughput part alone (no Curio checks, no 2 KiB).
if [ -n "${BENCH_ONLY:-}" ]; then PRELOAD='"porep-8m"'; SIZES="8 MiB"; else PRELOAD='"porep-2k", "porep-8m"'; SIZES="2 KiB, 8 MiB at once"; fi
stamp "sectors and parameters ($SIZES)"
[ -z "${BENCH_ONLY:-}" ] && "$B/porep-c2" make-c1 --sector-size 2KiB --miner f01000 --sector-id 1 --seed 1 \
    --out "$W/c1-2k.json" --gen-params "$P" > "$O/make-2k.log" 2>&1 &
"$B/porep-c2" make-c1 --sector-size 8MiB --miner f01000 --sector-id 2 --seed 2 --out "$W/c1-8m.json" \
    --gen-params "$P" > "$O/make-8m.log" 2>&1 &
wait
tail -n 1 "$O"/make-*.log | tee -a "$O/summary.txt"

daemon() { # tag config-extra serve-flags...
    local tag=$1 extra=$2; shift 2
    cat > "$W/$tag.toml" <<TOML
[server]
listen = "unix://$W/$tag.sock"
[prover]
params_dir = "$P"
preload = [$PRELOAD]
$extra
[jobs]
concurrent_proofs = $C
max_pending = 256
TOML
    rm -f "$W/$tag.sock"
    "$B/porep-c2" serve --config "$W/$tag.toml" "$@" > "$O/daemon-$tag.log" 2>&1 &
    echo $! > "$W/$tag.pid"
    for _ in $(seq 1 300); do
        [ -S "$W/$tag.sock" ] && break
        kill -0 "$(cat "$W/$tag.pid")" 2>/dev/null || { tail -n 3 "$O/daemon-$tag.log" | tee -a "$O/summary.txt"; break; }
        sleep 1
    done
    stamp "daemon $tag listening (mode $(stat -c %a "$W/$tag.sock"))"
}
stop() { kill -TERM "$(cat "$W/$1.pid")"; wait "$(cat "$W/$1.pid")"; echo "daemon $1 exit $?" | tee -a "$O/summary.txt"; }

check() { # tag c1 sector
    stamp "Curio's requests: $2 (daemon $1${DRILLED:+, drilled})"
    PYTHONUNBUFFERED=1 python3 scripts/curio_client_check.py "$S" "$W/$1.sock" "$2" 1000 "$3" "$B/porep-c2" "$P" \
        2>&1 | tee -a "$O/summary.txt"
}

if [ -z "${BENCH_ONLY:-}" ]; then
    # 2 KiB with the fault drill: GPU 0 fails its first partition, the
    # device is fenced for 2 s, no CPU retry: the first attempt FAILS; the
    # retry proves.
    daemon drill 'fence_secs = 2
retry_on_cpu = false' --fault-drill 0:0:1
    DRILLED=1 CURIO_CHECK_INJECTED_FAILURE=3 check drill "$W/c1-2k.json" 1
    stop drill
fi

# 8 MiB as Curio sends it, then the bench load through the same daemon
# (the daemon records the shape's matrices on its first proof: the first
# bench run is the cold one).
daemon node ''
[ -z "${BENCH_ONLY:-}" ] && check node "$W/c1-8m.json" 2
for run in 1 2; do
    stamp "daemon bench 8 MiB, run $run: -c $C -j $J (envelope, Curio's shape)"
    "$B/porep-c2" bench --daemon "unix://$W/node.sock" --params-dir "$P" --c1 "$W/c1-8m.json" --miner f01000 \
        --sector-id 2 -c "$C" -j "$J" --json "$O/daemon-8m-$run.json" 2> "$O/daemon-8m-$run.err" | tee -a "$O/summary.txt"
done
stop node
grep -E "loaded in|ready in|recorded" "$O/daemon-node.log" | head -5 | tee -a "$O/summary.txt"

for run in 1 2; do
    stamp "in-process bench 8 MiB, run $run: -c $C -j $J --preload (parameters resident, matrices recorded before the clock)"
    "$B/porep-c2" bench --params-dir "$P" --c1 "$W/c1-8m.json" --miner f01000 --sector-id 2 -c "$C" -j "$J" \
        --preload --json "$O/inproc-8m-$run.json" 2> "$O/inproc-8m-$run.err" | tee -a "$O/summary.txt"
    grep -E "recorded in|resident for" "$O/inproc-8m-$run.err" | tee -a "$O/summary.txt"
done

if [ -x "$B/c2-device-runner" ]; then
    stamp "runner: real 8 MiB witness path, 48 proofs at -c $C"
    "$B/c2-device-runner" --only real --real-sector 8m --real-partitions 1 --real-proofs 48 \
        --real-concurrency "$C" > "$O/runner-8m.log" 2>&1
    grep -E "s/proof|proofs|busy" "$O/runner-8m.log" | tail -n 6 | tee -a "$O/summary.txt"
fi
stamp "done"
