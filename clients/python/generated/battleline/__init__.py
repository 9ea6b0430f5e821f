"""Generated gRPC/protobuf code for the Battle Line API; never edit by hand."""
