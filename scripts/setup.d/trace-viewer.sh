#!/usr/bin/env bash
# nanomx-trace: installs the npm packages its browser test and benchmark use (playwright-core,
# which drives Debian's /usr/bin/chromium) from the committed package-lock.json. Safe to run
# twice: it does nothing when node_modules already matches the lock file.
set -euo pipefail
dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../tools/nanomx-trace" && pwd)"
if ! command -v npm >/dev/null; then
  echo "trace-viewer: npm not found (install Debian's nodejs and npm)" >&2
  exit 1
fi
stamp="$dir/node_modules/.package-lock.json"
if [[ -f "$stamp" && "$stamp" -nt "$dir/package-lock.json" ]]; then
  exit 0
fi
echo "trace-viewer: installing npm packages in $dir"
(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
