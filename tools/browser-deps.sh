#!/usr/bin/env bash
# browser-deps.sh -- make sure Debian's chromium and chromium-driver are installed, for the
# dashboard's browser tests (tests/browser/). Idempotent: silent when both are present.
#
# Why Debian's packages: Playwright's and Selenium Manager's own browser downloads need the
# network at test time; Debian's chromium and its matching chromedriver come from the same
# apt source as everything else CI installs, and /usr/bin/chromedriver always matches
# /usr/bin/chromium (one source package), so no version drift.
#
# Exit 0 when both are installed afterwards; 1 (one line on stderr) when they are missing and
# cannot be installed (not root, no apt-get). The browser tests then skip with that reason,
# except under CI (the CI variable set), where a missing browser fails them.
set -euo pipefail

PKGS=(chromium chromium-driver fonts-dejavu-core)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

say() { echo "browser-deps: $*" >&2; }
command -v apt-get >/dev/null || { say "no apt-get here; install ${missing[*]} by hand"; exit 1; }
if [ "$(id -u)" = 0 ]; then SUDO=(); elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  SUDO=(sudo -n); else say "need root to apt-get install ${missing[*]}"; exit 1; fi
say "apt-get install ${missing[*]}"
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  "${missing[@]}" >/dev/null
