#!/bin/sh
# The contract's checks: `buf lint` (protos/buf.yaml: the style guide and comments) and
# `buf breaking` against the previous commit's protos/ (the working tree's protos/, so a
# change not yet committed is checked too). buf is the one clients/web pins in its
# package-lock.json (@bufbuild/buf), installed by `npm ci` when missing.
set -eu
cd "$(dirname "$0")/.."
buf=clients/web/node_modules/.bin/buf
[ -x "$buf" ] || (cd clients/web && npm ci --no-audit --no-fund --loglevel=error)
"$buf" lint protos
if git rev-parse --verify --quiet HEAD~1 >/dev/null; then
  against=".git#ref=HEAD~1,subdir=protos"
else  # a first commit or a shallow clone of depth 1: the committed protos/ at least
  echo "check_protos: no previous commit here; buf breaking against HEAD" >&2
  against=".git#ref=HEAD,subdir=protos"
fi
"$buf" breaking protos --against "$against"
echo "buf lint and buf breaking (against $against): ok"
