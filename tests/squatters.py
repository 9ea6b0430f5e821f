"""Another local user's process on a port a client dials: a gRPC server that logs every
call it gets, the token and key in its metadata included (the port-owner tests)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

STRANGER = 65534  # `nobody`: the other local user the tests run as

# A gRPC server that answers every call UNIMPLEMENTED (health SERVING) and prints the
# method and metadata of each call it got, as a squatter on the engine's port would. It
# becomes the user given before it makes its socket (the interpreter may be in a home
# that user cannot read), so the kernel names that user as the listener's owner.
SQUATTER = textwrap.dedent("""
    import os, sys, time
    from concurrent import futures
    import grpc
    from grpc_health.v1 import health, health_pb2, health_pb2_grpc

    class Log(grpc.GenericRpcHandler):
        def service(self, details):
            print(details.method, dict(details.invocation_metadata), flush=True)
            return None

    server = grpc.server(futures.ThreadPoolExecutor(4))
    server.add_generic_rpc_handlers([Log()])
    checks = health.HealthServicer()
    checks.set("", health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(checks, server)
    os.setgid(int(sys.argv[2]))
    os.setuid(int(sys.argv[2]))
    if sys.argv[3:] == ["later"]:  # binds when told to, on its input
        print("waiting", flush=True)
        sys.stdin.readline()
    server.add_insecure_port(sys.argv[1])
    server.start()
    print("ready", flush=True)
    time.sleep(120)
""")


def squat(address: str, uid: int, script: Path, later: bool = False
           ) -> subprocess.Popen[str]:
    """The squatter on `address` as `uid`, listening once it returns; `later`: ready to
    bind, which it does on a line of input (as a squatter racing a check does)."""
    squatter = subprocess.Popen([sys.executable, str(script), address, str(uid),
                                 *(["later"] if later else [])], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert squatter.stdout is not None
    deadline = time.monotonic() + 30
    while squatter.stdout.readline().strip() != ("waiting" if later else "ready"):
        assert time.monotonic() < deadline and squatter.poll() is None, "squatter died"
    return squatter
