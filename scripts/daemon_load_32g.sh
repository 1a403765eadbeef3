#!/usr/bin/env bash
# The service at the 32 GiB shape (issue 15), TIMING ONLY: synthetic 32 GiB-
# shaped partitions over random parameters (no 32 GiB parameters exist here),
# proved in-process (`porep-c2 bench --synthetic`) and through a daemon
# started with `--synthetic-timing-only` (`porep-c2 bench --daemon
# --synthetic`), same -c / -j / host budget; the daemon's device pool sized
# by default (`vram_cap_gib = 0`). Usage: scripts/daemon_load_32g.sh BIN_DIR OUT_DIR [C] [J]
set -uo pipefail
B=$1; O=$2; C=${3:-3}; J=${4:-4}
W=${W:-/tmp/porep-c2-load32}; mkdir -p "$W" "$O"
export RUST_LOG=${RUST_LOG:-info}
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$O/summary32.txt"; }

stamp "in-process: bench --synthetic --partitions 10 -c $C -j $J --preload --host-budget-gb 64.4"
"$B/porep-c2" bench --synthetic --partitions 10 -c "$C" -j "$J" --preload --host-budget-gb 64.4 \
    --json "$O/inproc-32g.json" 2> "$O/inproc-32g.err" | tee -a "$O/summary32.txt"

cat > "$W/daemon.toml" <<TOML
[server]
listen = "unix://$W/cuzk.sock"
[prover]
host_budget_gib = 60
[jobs]
concurrent_proofs = $C
TOML
stamp "daemon start (--synthetic-timing-only, device memory sized by default)"
rm -f "$W/cuzk.sock"
"$B/porep-c2" serve --config "$W/daemon.toml" --synthetic-timing-only > "$O/daemon32.log" 2>&1 &
daemon=$!
for _ in $(seq 1 300); do [ -S "$W/cuzk.sock" ] && break; sleep 1; done
stamp "daemon listening"
grep -E "plan:|reserved" "$O/daemon32.log" | tee -a "$O/summary32.txt"
nvidia-smi --query-gpu=memory.used,memory.total --format=csv | tee -a "$O/summary32.txt"
stamp "daemon bench: --daemon --synthetic -c $C -j $J"
"$B/porep-c2" bench --daemon "unix://$W/cuzk.sock" --synthetic -c "$C" -j "$J" \
    --json "$O/daemon-32g.json" 2> "$O/daemon-32g.err" | tee -a "$O/summary32.txt"
nvidia-smi --query-gpu=memory.used,memory.total --format=csv | tee -a "$O/summary32.txt"
stamp "SIGTERM to the daemon"
kill -TERM "$daemon"; wait "$daemon"; echo "daemon exit $?" | tee -a "$O/summary32.txt"
stamp "done"

# The default device pool of a 2 KiB + 8 MiB daemon (sized for the circuits
# it serves): what it reserves at start, parameters not needed to start.
cat > "$W/small.toml" <<TOML
[server]
listen = "unix://$W/small.sock"
[prover]
circuits = ["porep-2k", "porep-8m"]
TOML
stamp "a 2 KiB + 8 MiB daemon's default pool"
rm -f "$W/small.sock"
"$B/porep-c2" serve --config "$W/small.toml" > "$O/daemon-small.log" 2>&1 &
daemon=$!
for _ in $(seq 1 120); do [ -S "$W/small.sock" ] && break; sleep 1; done
grep -E "plan:|reserved" "$O/daemon-small.log" | tee -a "$O/summary32.txt"
nvidia-smi --query-gpu=memory.used,memory.total --format=csv | tee -a "$O/summary32.txt"
kill -TERM "$daemon"; wait "$daemon"; echo "daemon exit $?" | tee -a "$O/summary32.txt"
stamp "done"
