#!/usr/bin/env python3
"""A client that sends exactly what Curio sends, against `porep-c2 serve`.

Curio's PoRep task (filecoin-project/curio, lib/ffi/cuzk_funcs.go,
PoRepSnarkCuzk) builds its request like this, and lib/cuzk/client.go sends
it with `Prove` only (256 MiB message limits, a 30-minute timeout), treating
anything but COMPLETED as a failed task, then runs VerifySeal on the bytes:

    wrapped = json.Marshal(c1OutputWrapper{SectorNum: int64(n),
                                           Phase1Out: c1JSON,   // []byte
                                           SectorSize: uint64(ssize)})
    SubmitProofRequest{
        RequestId:       fmt.Sprintf("porep-%d-%d", miner, n),
        ProofKind:       POREP_SEAL_COMMIT,
        SectorSize:      ssize,
        RegisteredProof: uint64(sn.ProofType),
        Priority:        NORMAL,
        VanillaProof:    wrapped,
        SectorNumber:    n,
        MinerId:         miner,
    }

Go's encoding/json writes the struct's fields in declaration order with no
spaces and a []byte as padded standard base64; `go_envelope` below writes the
same bytes. The request id is fixed per sector: Curio retries a failed task
with the same id, and the retry must be proved again.

    python scripts/curio_client_check.py STUBS_DIR SOCKET C1_JSON MINER SECTOR PORCEP_C2 PARAMS_DIR

STUBS_DIR holds Python stubs of proving.proto (grpc_tools.protoc); C1_JSON is
a registered sector's raw C1 output (what GeneratePoRepVanillaProof returns);
MINER is the actor id; PORCEP_C2 the `porep-c2` binary, whose `verify`
subcommand stands in for Curio's VerifySeal (filecoin-proofs' verifier with
the verifying key in PARAMS_DIR). Prints one line per check and
`N passed, M failed`; exits non-zero on any failure.
"""
import base64
import json
import os
import subprocess
import sys
import tempfile
import time

# abi.RegisteredSealProof numbers (go-state-types), by filecoin-proofs-api's
# names as a C1 output's "registered_proof" spells them.
SEAL_PROOFS = {
    f"StackedDrg{size}V1{suffix}": base + i
    for base, suffix in [(0, ""), (5, "_1"), (10, "_1_Feat_SyntheticPoRep"), (15, "_2_Feat_NonInteractivePoRep")]
    for i, size in enumerate(["2KiB", "8MiB", "512MiB", "32GiB", "64GiB"])
}
SECTOR_SIZES = {"2KiB": 2048, "8MiB": 8 << 20, "512MiB": 512 << 20, "32GiB": 32 << 30, "64GiB": 64 << 30}
PARTITIONS = {"2KiB": 1, "8MiB": 1, "512MiB": 1, "32GiB": 10, "64GiB": 10}


def go_envelope(c1_json: bytes, sector: int, sector_size: int) -> bytes:
    """json.Marshal(c1OutputWrapper{...}) as Go writes it."""
    b64 = base64.standard_b64encode(c1_json).decode("ascii")
    return json.dumps({"SectorNum": sector, "Phase1Out": b64, "SectorSize": sector_size},
                      separators=(",", ":")).encode()


def main():
    if len(sys.argv) != 8:
        print(__doc__, file=sys.stderr)
        return 2
    stubs, socket, c1_path, miner, sector, porep_c2, params_dir = sys.argv[1:]
    miner, sector = int(miner), int(sector)
    sys.path.insert(0, stubs)
    import grpc
    from cuzk.v1 import proving_pb2 as pb
    from cuzk.v1 import proving_pb2_grpc as rpc

    results = []

    def check(name, ok, detail=""):
        results.append(bool(ok))
        print(("PASS " if ok else "FAIL ") + name + (f" ({detail})" if detail and not ok else ""), flush=True)

    c1_json = open(c1_path, "rb").read()
    nonlocal_c1 = [c1_json]
    registered = json.loads(c1_json)["registered_proof"]
    size_name = next(s for s in SECTOR_SIZES if registered.startswith(f"StackedDrg{s}V"))
    sector_size, partitions = SECTOR_SIZES[size_name], PARTITIONS[size_name]

    def curio_request(envelope_size=sector_size, registered_proof=SEAL_PROOFS[registered]):
        return pb.SubmitProofRequest(
            request_id=f"porep-{miner}-{sector}",
            proof_kind=pb.POREP_SEAL_COMMIT,
            sector_size=sector_size,
            registered_proof=registered_proof,
            priority=pb.NORMAL,
            vanilla_proof=go_envelope(nonlocal_c1[0], sector, envelope_size),
            sector_number=sector,
            miner_id=miner,
        )

    limit = 256 << 20
    channel = grpc.insecure_channel(
        "unix://" + os.path.abspath(socket),
        # grpc-go (Curio's client) sends "localhost" as a unix socket's
        # authority; grpc-core would send the path, which h2 refuses.
        options=[
            ("grpc.max_send_message_length", limit),
            ("grpc.max_receive_message_length", limit),
            ("grpc.default_authority", "localhost"),
        ],
    )
    grpc.channel_ready_future(channel).result(timeout=120)
    engine = rpc.ProvingEngineStub(channel)

    def prove(request):
        """Curio's Client.Prove: only Prove, a 30-minute deadline."""
        return engine.Prove(pb.ProveRequest(submit=request), timeout=30 * 60).result

    def verifies(proof: bytes) -> bool:
        """Curio's VerifySeal on the returned bytes."""
        with tempfile.NamedTemporaryFile(suffix=".bin") as f:
            f.write(proof)
            f.flush()
            out = subprocess.run([porep_c2, "verify", c1_path, f.name, "--miner", f"f0{miner}",
                                  "--sector-id", str(sector), "--params-dir", params_dir],
                                 capture_output=True, text=True)
            if out.returncode != 0:
                print("     verify: " + (out.stdout + out.stderr).strip()[-400:])
            return out.returncode == 0

    # On a daemon run with a fault drill (`serve --fault-drill 0:0:1
    # --no-cpu-retry --fence-secs 2`, the device runner does), the first
    # attempt fails with the injected device fault; Curio's retry, once the
    # GPU is back in service, is proved.
    if os.environ.get("CURIO_CHECK_INJECTED_FAILURE"):
        failed = prove(curio_request())
        check("with a fault drill: the first attempt FAILED with the injected device fault",
              failed.status == pb.AwaitProofResponse.FAILED and "fault" in failed.error_message,
              f"status {failed.status}: {failed.error_message}")
        time.sleep(float(os.environ["CURIO_CHECK_INJECTED_FAILURE"]))
        retried = prove(curio_request())
        check("its retry with the same id and request: a new job, COMPLETED",
              retried.status == pb.AwaitProofResponse.COMPLETED and retried.job_id != failed.job_id,
              f"status {retried.status}: {retried.error_message}")
        check("the retry's proof verifies", verifies(retried.proof))
        # A different body from here on (a trailing space in the C1 JSON),
        # so the completed record does not answer the checks below.
        nonlocal_c1[0] = c1_json + b" "

    # A first attempt that fails (the client gives up: cancelled), then
    # Curio's retry with the same id and request: proved again, never the
    # old answer replayed.
    doomed = engine.SubmitProof(curio_request(), timeout=60)
    engine.CancelProof(pb.CancelProofRequest(job_id=doomed.job_id), timeout=60)
    ended = engine.AwaitProof(pb.AwaitProofRequest(job_id=doomed.job_id), timeout=30 * 60)
    # On a GPU a small sector can be proved before the cancel arrives.
    cancelled = ended.status != pb.AwaitProofResponse.COMPLETED
    if cancelled:
        check("a first attempt, cancelled, ends CANCELLED", ended.status == pb.AwaitProofResponse.CANCELLED,
              f"status {ended.status}")
    else:
        print("     NOTE: the first attempt completed before its cancel arrived: the retry below joins it")

    t = time.time()
    r = prove(curio_request())
    check(f"its retry as Curio sends it ({registered}, envelope, id porep-{miner}-{sector}): a new job, "
          f"COMPLETED, {192 * partitions} bytes",
          r.status == pb.AwaitProofResponse.COMPLETED and len(r.proof) == 192 * partitions
          and (r.job_id != doomed.job_id) == cancelled,
          f"status {r.status}, {len(r.proof)} bytes, job {r.job_id}: {r.error_message}")
    print(f"     (proved in {time.time() - t:.1f} s; the daemon says {r.total_ms} ms)")
    check("the proof verifies (filecoin-proofs' verifier, as Curio's VerifySeal)", verifies(r.proof))

    # The same request again (an answer lost on the way): the completed
    # job's record answers, no second proof.
    again = prove(curio_request())
    check("the same request again: the completed job answers with its proof",
          again.job_id == r.job_id and again.proof == r.proof, f"{again.job_id} vs {r.job_id}")

    # An envelope whose SectorSize is not the C1 output's: a clear FAILED.
    bad = prove(curio_request(envelope_size=sector_size * 2))
    check("a wrong SectorSize in the envelope: FAILED naming both sizes",
          bad.status == pb.AwaitProofResponse.FAILED and "SectorSize" in bad.error_message
          and str(sector_size) in bad.error_message and str(sector_size * 2) in bad.error_message,
          bad.error_message)

    # A request number of another sector size is refused.
    other = SEAL_PROOFS[registered] + (1 if size_name != "64GiB" else -1)
    wrong = prove(curio_request(registered_proof=other))
    check("a registered_proof of another sector size: FAILED",
          wrong.status == pb.AwaitProofResponse.FAILED and f"registered_proof {other}" in wrong.error_message,
          wrong.error_message)

    # Curio sends PoSt here too (proved and verified in the service's
    # tests/post.rs): undecodable vanilla proofs FAILED with the reason.
    post = pb.SubmitProofRequest(request_id=f"winpost-{miner}-0000000000000000", proof_kind=pb.WINNING_POST,
                                 sector_size=2048, registered_proof=0, priority=pb.CRITICAL,
                                 miner_id=miner, vanilla_proofs=[b"x"], randomness=bytes(32))
    r = prove(post)
    check("WINNING_POST with undecodable vanilla proofs: FAILED naming them",
          r.status == pb.AwaitProofResponse.FAILED and "cannot be decoded" in r.error_message,
          f"status {r.status}: {r.error_message}")
    # SnapDeals, as Curio's UpdateProve task sends it (proved and verified
    # in the service's tests/update.rs): undecodable partition proofs FAILED
    # with the reason.
    snap = pb.SubmitProofRequest(request_id=f"snap-{miner}-{sector}", proof_kind=pb.SNAP_DEALS_UPDATE,
                                 sector_size=2048, registered_proof=0, priority=pb.NORMAL,
                                 vanilla_proofs=[b"x"], sector_number=sector, miner_id=miner,
                                 comm_r_old=bytes(32), comm_r_new=bytes(32), comm_d_new=bytes(32))
    r = prove(snap)
    check("SNAP_DEALS_UPDATE with undecodable vanilla proofs: FAILED naming them",
          r.status == pb.AwaitProofResponse.FAILED and "cannot be decoded" in r.error_message,
          f"status {r.status}: {r.error_message}")

    status = engine.GetStatus(pb.GetStatusRequest(), timeout=10)
    drilled = 1 if os.environ.get("CURIO_CHECK_INJECTED_FAILURE") else 0
    check(f"GetStatus totals: {1 + drilled} completed, {4 + drilled} failed",
          (status.total_proofs_completed, status.total_proofs_failed) == (1 + drilled, 4 + drilled), str(status))
    text = engine.GetMetrics(pb.GetMetricsRequest(), timeout=10).prometheus_text
    check("GetMetrics labels by Curio's queue name",
          f'porep_c2_proofs_completed_total{{proof_kind="porep-c2"}} {1 + drilled}' in text, text[:400])

    failed = results.count(False)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
