#!/bin/sh
# Rebuild the web client (TypeScript stubs from protos/, then the Vite build that ships in
# services/gateway/battleline_gateway/site/) and fail if the committed files differ.
set -eu
cd "$(dirname "$0")/.."
(cd clients/web && npm ci --no-audit --no-fund --loglevel=error && npm run gen && npm run build)
stale=$(git status --porcelain -- clients/web/src/gen services/gateway/battleline_gateway/site)
if [ -n "$stale" ]; then
  echo "the committed web build is stale; run: cd clients/web && npm run gen && npm run build" >&2
  echo "$stale" >&2
  exit 1
fi
