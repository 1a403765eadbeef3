#!/usr/bin/env bash
# Issues 39 and 40 on one GPU: every proof kind Curio sends, on the device.
#
#   scripts/post_device_check.sh BIN_DIR OUT daemon|daemon-update|update-with-peer|update-peer-setup|setup|window|window-peer|winning-update|update|update-peer
#
# daemon:         `--only daemon`: registered 2 KiB WindowPoSt, WinningPoSt
#                 and a SnapDeals update through the daemon on the GPU
#                 workers, verified by filecoin-proofs; the WinningPoSt
#                 32 GiB latency table (alone, under a 32 GiB C2 load, host
#                 lanes on and off; random parameters: timing only).
# window:         `--only post` for a WindowPoSt 32 GiB partition (2349
#                 test sectors: vanilla verifier, native witness == gadgets,
#                 a·b = c, witness path == circuit path, end to end), then
#                 bellperson's CUDA prover on the same circuit, parameters
#                 and r, s (`peer-prove --circuit window-32g`, when BIN_DIR
#                 has it): proof bytes compared.
# daemon-update:  `daemon` with 6 WinningPoSt and 2 C2 proofs, then `update`.
# winning-update: the same for WinningPoSt 32 GiB, then `--only update` for
#                 2 KiB and 32 GiB SnapDeals test updates.
# window-peer:    the peer half of `window`, against ours from an earlier call.
# update:         the update half of `winning-update`.
# update-with-peer: `update`, then `update-peer` on its proof (one call).
# update-peer-setup: `update` at 32 GiB only (one proof), `update-peer`, then
#                 `setup`.
# setup:          `--only setup`: Groth16 test parameters made on the GPU
#                 from the 2 KiB and 32 GiB PoRep partitions' matrices.
# update-peer:    bellperson's CUDA prover on the 32 GiB update's partition 0
#                 (`peer-prove --circuit update-32g`), compared with ours.
# WINDOW_LIMIT, UPDATE_LIMIT and DAEMON_LIMIT (seconds) bound those steps when a call
# holds several parts.
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
# The runner's proof and the peer's for the same circuit, parameters, r, s:
# the peer proves the first partitions, compared with as many of ours.
same_bytes() {
    local kind=$1
    if [ -s "$out/ours-$kind.proof" ] && [ -s "$out/peer-$kind.proof" ]; then
        local n
        n=$(stat -c %s "$out/peer-$kind.proof")
        if cmp -s -n "$n" "$out/ours-$kind.proof" "$out/peer-$kind.proof"; then
            echo "$kind: peer-prove's proof bytes == ours ($n bytes; same circuit, parameters, r, s)" >> "$out/summary.txt"
        else
            echo "$kind: FAIL: peer-prove's proof bytes differ from ours" >> "$out/summary.txt"
        fi
    fi
}
peer() {
    local kind=$1 partitions=$2 limit=$3
    if [ -x "$bin/peer-prove" ]; then
        step "peer-$kind" "$limit" "$bin/peer-prove" --circuit "$kind" --partitions "$partitions" --seed 9 --reps "${PEER_REPS:-2}" \
            --proof-out "$out/peer-$kind.proof"
        same_bytes "$kind"
    fi
}
runner="$bin/c2-device-runner"
case "$part" in
daemon)
    step daemon "${DAEMON_LIMIT:-570}" "$runner" --only daemon --daemon-winning 8 --daemon-c2 4
    ;;
daemon-update)
    # One call for issue 40's device checks: the daemon part (registered
    # 2 KiB update and PoSt through the GPU workers, a shorter latency table)
    # then the 2 KiB and 32 GiB test updates.
    step daemon "${DAEMON_LIMIT:-300}" "$runner" --only daemon --daemon-winning 6 --daemon-c2 2
    step update "${UPDATE_LIMIT:-270}" "$runner" --only update --update-sizes 2k,32g --update-proofs 2 --proof-dir "$out"
    ;;
window)
    step window-32g "${WINDOW_LIMIT:-330}" "$runner" --only post --post-sizes 32g --post-kinds window --post-proofs 3 --proof-dir "$out"
    peer window-32g 1 260
    ;;
window-peer)
    # bellperson's CUDA prover on the WindowPoSt 32 GiB partition, compared
    # with ours from an earlier call (carried as $bin/ours-window-32g.proof).
    cp "$bin/ours-window-32g.proof" "$out/" 2>/dev/null
    peer window-32g 1 260
    ;;
update)
    step update "${UPDATE_LIMIT:-330}" "$runner" --only update --update-sizes 2k,32g --update-proofs 2 --proof-dir "$out"
    ;;
winning-update)
    step winning-32g 150 "$runner" --only post --post-sizes 32g --post-kinds winning --post-proofs 5 --proof-dir "$out"
    peer winning-32g 1 90
    step update 330 "$runner" --only update --update-sizes 2k,32g --update-proofs 2 --proof-dir "$out"
    ;;
update-with-peer)
    # Ours (2 KiB and 32 GiB) then bellperson's CUDA prover on the 32 GiB
    # update's partition 0 in one call: the update part took 150 s on an
    # H100 (2026-12-06), the peer gets the rest of the call, one rep.
    step update "${UPDATE_LIMIT:-200}" "$runner" --only update --update-sizes 2k,32g --update-proofs 2 --proof-dir "$out"
    PEER_REPS=1 peer update-32g 1 "${PEER_LIMIT:-380}"
    ;;
update-peer-setup)
    # Issue 40's last device item and issue 41's first in one call: ours on
    # the 32 GiB update (one proof; its partition 0 written for the peer),
    # bellperson's CUDA prover on that partition, then Groth16 parameters
    # made on the GPU for the 2 KiB and 32 GiB PoRep partitions.
    step update "${UPDATE_LIMIT:-140}" "$runner" --only update --update-sizes 32g --update-proofs 1 --proof-dir "$out"
    PEER_REPS=1 peer update-32g 1 "${PEER_LIMIT:-230}"
    step setup "${SETUP_LIMIT:-170}" "$runner" --only setup --setup-sizes 2k,32g
    ;;
setup)
    step setup "${SETUP_LIMIT:-300}" "$runner" --only setup --setup-sizes 2k,32g
    ;;
update-peer)
    # bellperson synthesizes the update circuit on one thread (~82 M
    # constraints at 32 GiB): its own call. Ours comes from the
    # winning-update call's OUT, carried back as $bin/ours-update-32g.proof.
    cp "$bin/ours-update-32g.proof" "$out/" 2>/dev/null
    peer update-32g 1 560
    ;;
esac
cat "$out/summary.txt"
