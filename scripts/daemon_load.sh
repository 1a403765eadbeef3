#!/usr/bin/env bash
# The service's load and soak run (issue 15): real 2 KiB and 8 MiB sectors
# (sealed with filecoin-proofs' PC1/PC2/C1 for miner f01000, random Groth16
# parameters generated here), proved in-process (`porep-c2 bench --preload`)
# and through the daemon (`porep-c2 serve` + `porep-c2 bench --daemon`) with
# the same -c / -j, then a soak of SOAK proofs through the daemon. Every
# proof is verified (by the prover, and again by the bench client for the
# daemon's). Usage: scripts/daemon_load.sh BIN_DIR OUT_DIR [C] [J] [SOAK]
# (SIZES="2k" for the 2 KiB sector alone; SOAK=0 for no soak).
set -uo pipefail
B=$1; O=$2; C=${3:-8}; J=${4:-32}; SOAK=${5:-100}
W=${W:-/tmp/porep-c2-load}; P=$W/params; SIZES=${SIZES:-2k 8m}
has() { [[ " $SIZES " == *" $1 "* ]]; }
mkdir -p "$W" "$P" "$O"
export RUST_LOG=${RUST_LOG:-info}
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$O/summary.txt"; }

stamp "sectors and parameters ($SIZES, at once)"
make() { # size bytes sector
    "$B/porep-c2" make-c1 --sector-size "$2" --miner f01000 --sector-id "$3" --seed "$3" --out "$W/c1-$1.json" \
        --gen-params "$P" > "$O/make-$1.log" 2>&1
    tail -n 1 "$O/make-$1.log" | tee -a "$O/summary.txt"
}
has 2k && make 2k 2KiB 1 &
has 8m && make 8m 8MiB 2 &
wait

stamp "check-params (random test parameters under production names: MISMATCH expected)"
"$B/porep-c2" check-params --params-dir "$P" --sector-size "${SIZES// /,}" --porep-only 2>&1 | tee -a "$O/summary.txt"

inproc() { # size sector
    stamp "in-process bench $1: -c $C -j $J --preload"
    "$B/porep-c2" bench --params-dir "$P" --c1 "$W/c1-$1.json" --miner f01000 --sector-id "$2" -c "$C" -j "$J" \
        --preload --json "$O/inproc-$1.json" 2> "$O/inproc-$1.err" | tee -a "$O/summary.txt"
}
has 2k && inproc 2k 1
has 8m && inproc 8m 2

cat > "$W/daemon.toml" <<TOML
[server]
listen = "unix://$W/cuzk.sock"
[prover]
params_dir = "$P"
preload = [$(for s in $SIZES; do printf '"porep-%s",' "$s"; done)]
[jobs]
concurrent_proofs = $C
max_pending = 256
TOML
stamp "daemon start (preloads: $SIZES)"
rm -f "$W/cuzk.sock"
"$B/porep-c2" serve --config "$W/daemon.toml" > "$O/daemon.log" 2>&1 &
daemon=$!
for _ in $(seq 1 300); do [ -S "$W/cuzk.sock" ] && break; sleep 1; done
stamp "daemon listening"
viad() { # size sector jobs tag
    stamp "daemon bench $1 ($4): -c $C -j $3"
    "$B/porep-c2" bench --daemon "unix://$W/cuzk.sock" --params-dir "$P" --c1 "$W/c1-$1.json" --miner f01000 \
        --sector-id "$2" -c "$C" -j "$3" --json "$O/daemon-$4.json" 2> "$O/daemon-$4.err" | tee -a "$O/summary.txt"
}
has 2k && viad 2k 1 "$J" 2k
has 8m && viad 8m 2 "$J" 8m
if [ "$SOAK" -gt 0 ]; then
    has 2k && viad 2k 1 "$SOAK" soak-2k
    has 8m && viad 8m 2 "$SOAK" soak-8m
fi
nvidia-smi --query-gpu=memory.used,memory.total --format=csv | tee -a "$O/summary.txt"
stamp "SIGTERM to the daemon"
kill -TERM "$daemon"; wait "$daemon"; echo "daemon exit $?" | tee -a "$O/summary.txt"
grep -c "completed in" "$O/daemon.log" | sed 's/^/daemon log: completed jobs /' | tee -a "$O/summary.txt"
grep -E "loaded in|ready in" "$O/daemon.log" | tee -a "$O/summary.txt"
# In-process again after the daemon, for the run-to-run spread.
if [ -n "${AGAIN:-}" ]; then has 2k && inproc 2k 1; has 8m && inproc 8m 2; fi
stamp "done"
