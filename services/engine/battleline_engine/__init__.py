"""The Battle Line engine: the authoritative gRPC service, state in Redis.

Layers (docs/API.md has the module table; tests/engine/test_layers.py checks it):
the domain (matches, model, clocks, errors, hub, sweeper) imports no grpc and no
protobuf; storage (the `storage` package) knows Redis keys and no status codes;
the servicers (lobby, game, watch, record, hints, views, status, runtime, auth,
ratelimit) decode, call the domain and encode.
"""
