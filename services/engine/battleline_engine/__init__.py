"""The Battle Line engine: the authoritative gRPC service, state in Redis."""
