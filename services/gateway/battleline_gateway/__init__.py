"""The web gateway: the engine's public services for browsers, and the web page.

Browsers cannot speak native gRPC, so the gateway serves the same
`battleline.v1` services over the Connect protocol and gRPC-Web (the
`connectrpc` library does the wire protocols) and forwards every call to the
engine as an ordinary gRPC client. It holds no state: the engine stays the
only authority, and the gateway scales on its own.
"""
