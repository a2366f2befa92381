#!/usr/bin/env bash
# Installs the real CDP clients the browser gateway's tests drive
# (puppeteer-core, playwright-core; pinned in e2e/testdata/cdp/package.json
# and package-lock.json) with the machine's Node and npm. No browser is
# downloaded: the clients drive the workers' Chromium through a hub.
# Idempotent: an install matching the lock file is kept. `paprika up` and
# the Go build need none of this.
set -euo pipefail
cd "$(dirname "$0")/../e2e/testdata/cdp"
if ! command -v npm >/dev/null; then
  echo "!! npm not found: the Puppeteer/Playwright gateway tests will skip (and fail under CI=true)" >&2
  exit 0
fi
if [ -f node_modules/.package-lock.json ] && cmp -s package-lock.json node_modules/.paprika-lock; then
  echo "== cdp clients: up to date"
  exit 0
fi
export PUPPETEER_SKIP_DOWNLOAD=1 PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
npm ci --no-audit --no-fund --loglevel=error
cp package-lock.json node_modules/.paprika-lock
echo "== cdp clients: puppeteer-core $(node -p "require('puppeteer-core/package.json').version"), playwright-core $(node -p "require('playwright-core/package.json').version")"
