"""List an engine's gRPC services (and their methods) through server reflection,
the way `grpcurl HOST:PORT list` does, with grpcio-reflection's client.

    python examples/reflect.py --target 127.0.0.1:50051
    python examples/reflect.py --target 127.0.0.1:50051 --methods

With the client alone installed, add its extra first: pip install './clients/python[reflection]'.
"""

from __future__ import annotations

import argparse

import grpc
from google.protobuf.descriptor_pool import DescriptorPool
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="127.0.0.1:50051")
    parser.add_argument("--methods", action="store_true", help="also list each service's RPCs")
    args = parser.parse_args()
    with grpc.insecure_channel(args.target) as channel:
        database = ProtoReflectionDescriptorDatabase(channel)
        pool = DescriptorPool(database)
        for name in sorted(database.get_services()):
            print(name)
            if args.methods:
                for method in pool.FindServiceByName(name).methods:
                    stream = "stream " if method.server_streaming else ""
                    print(f"  rpc {method.name}({method.input_type.full_name}) returns "
                          f"({stream}{method.output_type.full_name})")


if __name__ == "__main__":
    main()
