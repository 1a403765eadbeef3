#!/usr/bin/env bash
# Full-size proofs of every kind Curio sends, on one GPU (issues 39-41),
# with Groth16 test parameters generated on the GPU for each circuit: every
# proof is verified, and with a runner built with `--features
# bellperson-cuda` partition 0 is also proved by bellperson's CUDA prover
# with the same parameters, r and s (bytes compared in the runner).
#
#   scripts/post_device_check.sh BIN_DIR OUT daemon|daemon-update|window|winning-update|update|setup|verified|capped|capped-daemon|abc-capped|window-daemon|msm-capped|batched|msm-batched|batched-table
#
# daemon:         `--only daemon`: registered 2 KiB WindowPoSt, WinningPoSt
#                 and a SnapDeals update through the daemon on the GPU
#                 workers, verified by filecoin-proofs; the WinningPoSt
#                 32 GiB latency table (alone, under a 32 GiB C2 load, host
#                 lanes on and off).
# window:         `--only post` for a WindowPoSt 32 GiB partition (2349
#                 test sectors: vanilla verifier, native witness == gadgets,
#                 a·b = c, witness path == circuit path, end to end), then
#                 bellperson on the same circuit, parameters and r, s.
# daemon-update:  `daemon` with 6 WinningPoSt and 2 C2 proofs, then `update`.
# winning-update: the same for WinningPoSt 32 GiB, then `update`.
# update:         `--only update` for 2 KiB and 32 GiB SnapDeals test
#                 updates, bellperson on each partition 0.
# setup:          `--only setup`: Groth16 test parameters made on the GPU
#                 from the 2 KiB and 32 GiB PoRep partitions' matrices.
# verified:       `--only real` at 2 KiB, then 32 GiB: parameters made on
#                 the GPU, proofs verified (facade and verify_seal), partition
#                 0 == bellperson's (REAL_SMALL_LIMIT, REAL_LIMIT).
# capped:         `--only real` at 32 GiB, one partition, then the same
#                 partition on backends capped at 24 and 16 GiB (one worker;
#                 page-locked or staged parameters, a, b, c streamed or from
#                 the host): verified, bytes == the uncapped run's.
# capped-daemon:  `capped`, then `daemon` with 6 WinningPoSt and 2 C2
#                 proofs.
# abc-capped:     `--only abc` at 2 KiB and 32 GiB (a, b, c on the GPU from
#                 full, streamed and repeated matrices == the CPU's), then
#                 `capped`.
# window-daemon:  `window` without bellperson (2 proofs), then `daemon` with
#                 6 WinningPoSt and 2 C2 proofs.
# batched:        the whole 32 GiB sector's 10 partitions at 24 and 16 GiB caps,
#                 one partition per pass against batched passes (issue 42):
#                 verified, bytes == the uncapped whole proof's.
# msm-batched:    `--only msm --quick` (batched passes == blst), then
#                 `batched`.
# batched-table:  issue 42's table: CAP_PROOFS (5) whole 32 GiB proofs at 24
#                 and 16 GiB caps with CAP_WORKERS (1,2) workers asked for,
#                 batched passes, 2 proofs in flight: verified, bytes == the
#                 uncapped proof's, PCIe bytes, batches, 25 GB/s projection.
# WINDOW_LIMIT, CAPPED_LIMIT, UPDATE_LIMIT, DAEMON_LIMIT, SETUP_LIMIT and REAL_LIMIT
# (seconds) bound those steps when a call holds several parts.
# Each command's log goes to OUT/<name>.log (limited by `timeout`, so one
# slow step leaves the call its other steps); OUT/summary.txt has one line
# per command (exit status, seconds, the last line that says what passed).
set -uo pipefail
bin=$1 out=$2 part=$3
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >> "$out/summary.txt" 2>&1
step() {
    local name=$1 limit=$2
    shift 2
    local t0
    t0=$(date +%s)
    timeout "$limit" "$@" > "$out/$name.log" 2>&1
    local rc=$?
    echo "$name: exit $rc, $(( $(date +%s) - t0 )) s, $(grep -E 'checks? passed|PEER|FAIL' "$out/$name.log" | tail -1)" >> "$out/summary.txt"
}
runner="$bin/c2-device-runner"
# bellperson's own log lines (its synthesis and prover times, and a
# "Falling back to CPU" warning should its GPU refuse) go to the logs.
export RUST_LOG="${RUST_LOG:-warn,bellperson=info}"
case "$part" in
daemon)
    step daemon "${DAEMON_LIMIT:-570}" "$runner" --only daemon --daemon-winning 8 --daemon-c2 4
    ;;
daemon-update)
    step daemon "${DAEMON_LIMIT:-300}" "$runner" --only daemon --daemon-winning 6 --daemon-c2 2
    step update "${UPDATE_LIMIT:-270}" "$runner" --only update --update-sizes 2k,32g --update-proofs 2 --bellperson
    ;;
window)
    step window-32g "${WINDOW_LIMIT:-560}" "$runner" --only post --post-sizes 32g --post-kinds window --post-proofs 3 --bellperson
    ;;
update)
    step update "${UPDATE_LIMIT:-560}" "$runner" --only update --update-sizes 2k,32g --update-proofs 2 --bellperson
    ;;
winning-update)
    step winning-32g 150 "$runner" --only post --post-sizes 32g --post-kinds winning --post-proofs 5 --bellperson
    step update "${UPDATE_LIMIT:-400}" "$runner" --only update --update-sizes 2k,32g --update-proofs 2 --bellperson
    ;;
setup)
    step setup "${SETUP_LIMIT:-300}" "$runner" --only setup --setup-sizes 2k,32g
    ;;
verified)
    # Issue 41: 2 KiB first (seconds: the whole flow), then 32 GiB.
    step real-2k "${REAL_SMALL_LIMIT:-120}" "$runner" --only real --real-sector 2k --real-partitions 1 --bellperson
    step real-32g "${REAL_LIMIT:-560}" "$runner" --only real --real-sector 32g --real-partitions 1 --bellperson
    ;;
capped)
    step capped-32g "${CAPPED_LIMIT:-560}" "$runner" --only real --real-sector 32g --real-partitions 1 --real-vram-caps 24,16
    ;;
abc-capped)
    step abc "${ABC_LIMIT:-200}" "$runner" --only abc --abc-sectors 2k,32g
    step capped-32g "${CAPPED_LIMIT:-380}" "$runner" --only real --real-sector 32g --real-partitions 1 --real-vram-caps 24,16
    ;;
window-daemon)
    step window-32g "${WINDOW_LIMIT:-380}" "$runner" --only post --post-sizes 32g --post-kinds window --post-proofs 2
    step daemon "${DAEMON_LIMIT:-200}" "$runner" --only daemon --daemon-winning 6 --daemon-c2 2
    ;;
batched|msm-batched)
    if [ "$part" = msm-batched ]; then
        step msm "${MSM_LIMIT:-150}" "$runner" --only msm --quick --skip-bench
    fi
    step batched-32g "${CAPPED_LIMIT:-420}" "$runner" --only real --real-sector 32g --real-partitions 1 --real-vram-caps 24,16 --real-cap-partitions 10 --real-cap-variants repeated,batched
    ;;
batched-table)
    step batched-table "${CAPPED_LIMIT:-560}" "$runner" --only real --real-sector 32g --real-partitions 1 --real-vram-caps 24,16 --real-cap-variants none --real-cap-proofs "${CAP_PROOFS:-5}" --real-cap-workers "${CAP_WORKERS:-1,2}"
    ;;
msm-capped)
    step msm "${MSM_LIMIT:-220}" "$runner" --only msm --quick --skip-bench
    step capped-32g "${CAPPED_LIMIT:-330}" "$runner" --only real --real-sector 32g --real-partitions 1 --real-vram-caps 24,16
    ;;
capped-daemon)
    step capped-32g "${CAPPED_LIMIT:-390}" "$runner" --only real --real-sector 32g --real-partitions 1 --real-vram-caps 24,16
    step daemon "${DAEMON_LIMIT:-190}" "$runner" --only daemon --daemon-winning 6 --daemon-c2 2
    ;;
*)
    echo "unknown part $part" >&2
    exit 2
    ;;
esac
cat "$out/summary.txt"
