#!/usr/bin/env bash
# The fault drill (issue 17's failure run, one-GPU part): a real 8 MiB
# sector (filecoin-proofs' PC1/PC2/C1 for miner f01000, random Groth16
# parameters generated here) proved through the daemon (`porep-c2 serve
# --fault-drill`) by the bench client (`porep-c2 bench --daemon`, which
# verifies every proof it gets back), while device 0's workers are made to
# fail:
#   A. one transient fault (`--fault-drill 0:FROM:1`, `fence_secs = 20`):
#      a clean load first (the baseline), then a load during which the
#      fault happens; the device is fenced 20 s (the CPU proves), then
#      proves again.
#   B. a dead device (`--fault-drill 0:FROM`, `fence_secs = 300`): after
#      the first fault everything goes to the CPU; the daemon keeps
#      answering.
#   C. one transient fault with `fence_secs = 0`: the failed partition is
#      proved again on the same GPU, nothing goes to the CPU.
# Usage: scripts/fault_drill.sh BIN_DIR OUT_DIR [C] [J]
set -uo pipefail
B=$1; O=$2; C=${3:-4}; J=${4:-20}
W=${W:-/tmp/porep-c2-drill}; P=$W/params
mkdir -p "$W" "$P" "$O"
export RUST_LOG=${RUST_LOG:-info}
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$O/summary.txt"; }

stamp "8 MiB sector and parameters"
"$B/porep-c2" make-c1 --sector-size 8MiB --miner f01000 --sector-id 2 --seed 2 --out "$W/c1.json" \
    --gen-params "$P" > "$O/make.log" 2>&1
tail -n 1 "$O/make.log" | tee -a "$O/summary.txt"

daemon() { # tag drill fence_secs
    cat > "$W/$1.toml" <<TOML
[server]
listen = "unix://$W/$1.sock"
[prover]
params_dir = "$P"
preload = ["porep-8m"]
fence_secs = $3
[jobs]
concurrent_proofs = $C
max_pending = 256
TOML
    rm -f "$W/$1.sock"
    "$B/porep-c2" serve --config "$W/$1.toml" --fault-drill "$2" > "$O/daemon-$1.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 120); do [ -S "$W/$1.sock" ] && break; sleep 1; done
    stamp "daemon $1 listening (--fault-drill $2, fence_secs = $3)"
}
load() { # tag jobs name
    stamp "bench $1 $3: -c $C -j $2"
    "$B/porep-c2" bench --daemon "unix://$W/$1.sock" --params-dir "$P" --c1 "$W/c1.json" --miner f01000 \
        --sector-id 2 -c "$C" -j "$2" --json "$O/bench-$1-$3.json" 2> "$O/bench-$1-$3.err" | tee -a "$O/summary.txt"
    echo "bench exit ${PIPESTATUS[0]}" | tee -a "$O/summary.txt"
}
stop() { # tag
    kill -TERM "$pid"; wait "$pid"; echo "daemon $1 exit $?" | tee -a "$O/summary.txt"
    grep -E "FAULT DRILL|out of service|fault drill" "$O/daemon-$1.log" | head -n 4 | cut -c1-400 | tee -a "$O/summary.txt"
    grep -c "synthesizing it again" "$O/daemon-$1.log" | sed 's/^/partitions retried (log lines): /' | tee -a "$O/summary.txt"
}

# A: an 8 MiB sector is one partition; the clean load is J partitions on
# device 0, the fault comes 10 partitions into the second load.
daemon A "0:$(( J + 10 )):1" 20
load A "$J" clean
load A "$(( 2 * J ))" transient
stop A

# B: a dead device from its 10th partition on.
daemon B "0:10" 300
load B "$J" dead
stop B

# C: one fault, no cool-down: the partition again on the same device.
daemon C "0:10:1" 0
load C "$J" again
stop C
stamp "done"
