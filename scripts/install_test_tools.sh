#!/bin/sh
# What the tests need beyond pyproject.toml: Debian's Chromium for the browser test
# (tests/web drives /usr/bin/chromium with Playwright; no browser download) and npm for
# the Node.js client test. Installs only what is missing; needs root for apt-get.
set -eu
missing=""
[ -x /usr/bin/chromium ] || missing="$missing chromium"
command -v npm >/dev/null 2>&1 || missing="$missing nodejs npm"
if [ -n "$missing" ]; then
  apt-get update -qq
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
fi
