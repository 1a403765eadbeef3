#!/usr/bin/env bash
# Issue 38 on the H200: this tree's device runner after the c2-cuda soundness
# change (driver loaded at run time, results read as integers, fenced device
# buffers), against the runner of the commit before it.
#
#   scripts/soundness_device_check.sh NEW_BIN_DIR OLD_BIN_DIR OUT checks|bench
#
# checks: the quick suite (`--quick --skip-bench`) and the registered 2 KiB
#         check (`--only registered --registered 2k`: random parameters for
#         the real circuit, GPU proof == CPU proof, verified), new binary.
# bench:  `--only msm --quick` with the new binary (MSM checks and kernel
#         figures), then the figures alone (`--skip-checks`) old, new, old,
#         new: the same machine, the same run, side by side.
# Each command's log goes to OUT/<name>.log; OUT/summary.txt has one line
# per command (exit status, seconds, the runner's last line).
set -uo pipefail
new=$1 old=$2 out=$3 part=$4
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >> "$out/summary.txt" 2>&1
step() {
    local name=$1
    shift
    local t0
    t0=$(date +%s)
    "$@" > "$out/$name.log" 2>&1
    local rc=$?
    echo "$name: exit $rc, $(( $(date +%s) - t0 )) s, $(grep -E 'checks? passed|passed|FAIL' "$out/$name.log" | tail -1)" >> "$out/summary.txt"
}
msm=(--only msm --quick --msm-g1 24,26 --msm-g2 24 --msm-porep 26)
case "$part" in
checks)
    step quick "$new/c2-device-runner" --quick --skip-bench
    step registered "$new/c2-device-runner" --only registered --registered 2k
    ;;
bench)
    step msm-new-checked "$new/c2-device-runner" "${msm[@]}"
    step msm-old-1 "$old/c2-device-runner" "${msm[@]}" --skip-checks
    step msm-new-1 "$new/c2-device-runner" "${msm[@]}" --skip-checks
    step msm-old-2 "$old/c2-device-runner" "${msm[@]}" --skip-checks
    step msm-new-2 "$new/c2-device-runner" "${msm[@]}" --skip-checks
    ;;
esac
cat "$out/summary.txt"
