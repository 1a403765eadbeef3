#!/usr/bin/env python3
"""Wire compatibility of `porep-c2 serve` with another gRPC implementation.

Python's grpcio with stubs generated from the same proto file
(crates/porep-c2-service/proto/cuzk/v1/proving.proto) talks to a running
daemon on a unix socket, as Curio's Go client does (unix:// address, 256 MiB
messages). Run against the service crate's `tiny-daemon` example (CI does):

    python -m grpc_tools.protoc -I crates/porep-c2-service/proto \
        --python_out=OUT --grpc_python_out=OUT cuzk/v1/proving.proto
    python scripts/cuzk_client_check.py OUT SOCKET

Prints one line per check and `N passed, M failed`; exits non-zero on any
failure.
"""
import os
import sys
import time


def main():
    if len(sys.argv) != 3:
        print("usage: cuzk_client_check.py STUBS_DIR SOCKET", file=sys.stderr)
        return 2
    sys.path.insert(0, sys.argv[1])
    import grpc
    from cuzk.v1 import proving_pb2 as pb
    from cuzk.v1 import proving_pb2_grpc as rpc

    results = []

    def check(name, ok, detail=""):
        results.append(ok)
        print(("PASS " if ok else "FAIL ") + name + (f" ({detail})" if detail and not ok else ""))

    limit = 256 << 20
    channel = grpc.insecure_channel(
        "unix://" + os.path.abspath(sys.argv[2]),
        # grpc-core sends the socket's path as the HTTP/2 :authority of a
        # unix:// target, which the server's HTTP/2 layer (h2) refuses as a
        # malformed authority (RST_STREAM, PROTOCOL_ERROR); grpc-go, Curio's
        # client, sends "localhost" for unix sockets, as this option does.
        options=[
            ("grpc.max_send_message_length", limit),
            ("grpc.max_receive_message_length", limit),
            ("grpc.default_authority", "localhost"),
        ],
    )
    grpc.channel_ready_future(channel).result(timeout=60)
    engine = rpc.ProvingEngineStub(channel)

    def porep(request_id, vanilla, sector, priority=pb.NORMAL):
        return pb.SubmitProofRequest(
            request_id=request_id,
            proof_kind=pb.POREP_SEAL_COMMIT,
            registered_proof=5,
            priority=priority,
            vanilla_proof=vanilla,
            sector_number=sector,
            miner_id=1000,
        )

    status = engine.GetStatus(pb.GetStatusRequest(), timeout=10)
    check("GetStatus answers (no proofs yet)", status.total_proofs_completed == 0, str(status))

    t = time.time()
    r = engine.Prove(pb.ProveRequest(submit=porep("py-1", b"11:1", 11)), timeout=900).result
    check(
        "Prove: a tiny sector's proof, COMPLETED, 192 bytes, timings filled",
        r.status == pb.AwaitProofResponse.COMPLETED and len(r.proof) == 192 and r.total_ms > 0,
        f"status {r.status}, {len(r.proof)} bytes, {r.error_message}",
    )
    print(f"     (proved in {time.time() - t:.1f} s)")

    again = engine.SubmitProof(porep("py-1", b"11:1", 11), timeout=10)
    awaited = engine.AwaitProof(pb.AwaitProofRequest(job_id=again.job_id), timeout=60)
    check(
        "SubmitProof with the same request_id: the same job, AwaitProof returns its proof",
        awaited.job_id == r.job_id and awaited.proof == r.proof,
        f"{awaited.job_id} vs {r.job_id}",
    )

    bad = engine.Prove(pb.ProveRequest(submit=porep("py-2", b"not a sector", 12)), timeout=60).result
    check(
        "Prove with a malformed vanilla_proof: FAILED with the reason",
        bad.status == pb.AwaitProofResponse.FAILED and "not a sector" in bad.error_message,
        bad.error_message,
    )

    post = porep("py-3", b"", 13, pb.CRITICAL)
    post.proof_kind = pb.WINNING_POST
    try:
        engine.Prove(pb.ProveRequest(submit=post), timeout=10)
        check("WINNING_POST: UNIMPLEMENTED", False, "it answered")
    except grpc.RpcError as e:
        check("WINNING_POST: UNIMPLEMENTED", e.code() == grpc.StatusCode.UNIMPLEMENTED, str(e.code()))

    try:
        engine.AwaitProof(pb.AwaitProofRequest(job_id="no-such-job"), timeout=10)
        check("AwaitProof of an unknown job: NOT_FOUND", False, "it answered")
    except grpc.RpcError as e:
        check("AwaitProof of an unknown job: NOT_FOUND", e.code() == grpc.StatusCode.NOT_FOUND, str(e.code()))

    status = engine.GetStatus(pb.GetStatusRequest(), timeout=10)
    check(
        "GetStatus totals: 1 completed, 1 failed",
        (status.total_proofs_completed, status.total_proofs_failed) == (1, 1),
        str(status),
    )
    text = engine.GetMetrics(pb.GetMetricsRequest(), timeout=10).prometheus_text
    check(
        "GetMetrics: Prometheus text with the completed count",
        'porep_c2_proofs_completed_total{proof_kind="POREP_SEAL_COMMIT"} 1' in text,
        text[:400],
    )

    failed = results.count(False)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
