#!/bin/sh
# Build the Go bot offline with Debian's Go packages (scripts/install_test_tools.sh installs
# them): golang-go, golang-google-grpc-dev, golang-google-protobuf-dev with
# golang-github-golang-protobuf-1-5-dev, golang-google-genproto-dev (errdetails),
# protoc-gen-go (APIv2: the contract uses proto3
# `optional`, which Debian's older protoc-gen-go 1.3 refuses), protoc-gen-go-grpc and
# protobuf-compiler.
#
#   sh clients/go/build.sh OUT_DIR      ->  OUT_DIR/battleline-bot
#
# The stubs are generated from protos/ into OUT_DIR on every build, never checked in (so
# they cannot go stale). GOPATH mode: OUT_DIR/gopath/src holds the generated package
# (battleline/gen/battlelinev1) and a copy of bot/, and Debian's /usr/share/gocode
# supplies grpc and protobuf: nothing is downloaded.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
protos="$here/../../protos"
out=$(mkdir -p "$1" && cd "$1" && pwd)
src="$out/gopath/src/battleline"
pkg=battleline/gen/battlelinev1
rm -rf "$src" && mkdir -p "$src/bot"

# Each file of the contract goes to one Go package (the protos carry no go_package option:
# that is each language's choice, made here), written under its import path.
maps=""
for proto in "$protos"/battleline/v1/*.proto; do
  maps="${maps:+$maps,}Mbattleline/v1/$(basename "$proto")=$pkg"
done
(cd "$protos" && protoc -I . --go_out="$maps:$out/gopath/src" \
  --go-grpc_out="$maps:$out/gopath/src" battleline/v1/*.proto)
cp "$here"/bot/*.go "$src/bot/"
unformatted=$(gofmt -l "$here/bot")
[ -z "$unformatted" ] || { echo "not gofmt-formatted: $unformatted" >&2; exit 1; }
export GOPATH="$out/gopath:/usr/share/gocode" GO111MODULE=off GOFLAGS=  # go's own build cache
go vet battleline/bot
go build -o "$out/battleline-bot" battleline/bot
echo "built $out/battleline-bot"
