#!/usr/bin/env bash
# Issue 17 on a two-GPU host (`nvidia-h200-x2`): the same binaries and
# command on one GPU and on two (CUDA_VISIBLE_DEVICES), one part per call
# (each fits the device tool's 10 minutes):
#   32g-1 / 32g-2  real 32 GiB CC test sectors (random parameters of the
#                  circuit's lengths), 5 proofs at -c 2 and -c 3: s/proof,
#                  kernel-busy per GPU, host memory peak, bytes to the device
#   8m-1 / 8m-2    real 8 MiB sectors, 48 proofs at -c 16
#   service        the daemon on both GPUs: a real 8 MiB load through gRPC
#                  (partitions per device from its metrics), high-priority
#                  proofs beside a normal load (latencies), then the fault
#                  drill on GPU 0 (its partitions go to GPU 1, none to the CPU)
# Usage: scripts/two_gpus.sh BIN_DIR OUT_DIR PART
# BIN_DIR holds c2-device-runner and porep-c2 (both built with cuda).
# DRILL=DEVICE:FROM[:FAULTS] sets the service part's drill (default 0:20).
set -uo pipefail
B=$1; O=$2; PART=$3
mkdir -p "$O"
export RUST_LOG=${RUST_LOG:-info}
runner() { # gpus args...
    local g=$1; shift
    echo "CUDA_VISIBLE_DEVICES=$g c2-device-runner $*" | tee -a "$O/summary.txt"
    CUDA_VISIBLE_DEVICES=$g "$B/c2-device-runner" "$@" > "$O/runner-$PART.log" 2>&1
    echo "exit $?" | tee -a "$O/summary.txt"
    grep -E "throughput|passed|failed" "$O/runner-$PART.log" | tee -a "$O/summary.txt"
}
case $PART in
    32g-1) runner 0 --only real --real-sector 32g --real-partitions 1 --real-proofs 5 --real-concurrency 2,3 ;;
    32g-2) runner 0,1 --only real --real-sector 32g --real-partitions 1 --real-proofs 5 --real-concurrency 2,3 ;;
    8m-1) runner 0 --only real --real-sector 8m --real-partitions 1 --real-proofs 48 --real-concurrency 16 ;;
    8m-2) runner 0,1 --only real --real-sector 8m --real-partitions 1 --real-proofs 48 --real-concurrency 16 ;;
    service)
        # The drill script's sector and parameters, one daemon per setting.
        W=${W:-/tmp/porep-c2-two}; P=$W/params; mkdir -p "$W" "$P"
        "$B/porep-c2" make-c1 --sector-size 8MiB --miner f01000 --sector-id 2 --seed 2 --out "$W/c1.json" \
            --gen-params "$P" > "$O/make.log" 2>&1
        for drill in none "${DRILL:-0:20}"; do
            cat > "$W/d.toml" <<TOML
[server]
listen = "unix://$W/d.sock"
[prover]
params_dir = "$P"
preload = ["porep-8m"]
[jobs]
concurrent_proofs = 16
max_pending = 256
TOML
            rm -f "$W/d.sock"
            flag=(); [ "$drill" != none ] && flag=(--fault-drill "$drill")
            "$B/porep-c2" serve --config "$W/d.toml" "${flag[@]}" > "$O/daemon-$drill.log" 2>&1 &
            pid=$!
            for _ in $(seq 1 120); do [ -S "$W/d.sock" ] && break; sleep 1; done
            echo "daemon on both GPUs, drill $drill" | tee -a "$O/summary.txt"
            bench() { # tag priority c j
                "$B/porep-c2" bench --daemon "unix://$W/d.sock" --params-dir "$P" --c1 "$W/c1.json" --miner f01000 \
                    --sector-id 2 --priority "$2" -c "$3" -j "$4" 2> "$O/bench-$drill-$1.err" | tee -a "$O/summary.txt"
            }
            bench load normal 16 64
            if [ "$drill" = none ]; then
                # Priorities across the devices: a normal load, and 3 s in,
                # a few high-priority proofs beside it: their latency
                # against the normal ones' in the same seconds.
                bench normal normal 16 96 &
                normal=$!
                sleep 3
                bench high high 2 8
                wait "$normal"   # not a bare wait: the daemon is a job of this shell too
            fi
            kill -TERM "$pid"; wait "$pid"; echo "daemon exit $?" | tee -a "$O/summary.txt"
        done ;;
    *) echo "unknown part $PART" >&2; exit 2 ;;
esac
