#!/usr/bin/env bash
# Print the path of the CPython 3.11 the project venv is built on (`make setup`; issue 28).
#
# The interpreter is a choice: Debian's own /usr/bin/python3.11 is built with PGO and LTO and
# links libpython statically, and on this machine kind runs the simulator ~1.2-1.85x faster than
# a plain `./configure --enable-shared` build (e.g. pyenv's default, often first on PATH). So:
#   1. $PYTHON if set (any CPython >= 3.11: the user's choice wins);
#   2. Debian's /usr/bin/python3.11 when present;
#   3. on Debian/Ubuntu as root without it: apt-get install python3.11 (+ -dev for the compiled build);
#   4. else the first python3 on PATH (it works; it may be slower: `make bench` names it).
# docs/performance.md "The interpreter" has the measurements.
set -euo pipefail
ok() { "$1" -c 'import sys; sys.exit(0 if sys.version_info[:2] >= (3, 11) else 1)' 2>/dev/null; }
if [[ -n "${PYTHON:-}" ]]; then
    ok "$PYTHON" || { echo "PYTHON=$PYTHON is not a CPython >= 3.11: unset it or point it at one" >&2; exit 1; }
    command -v "$PYTHON"; exit 0
fi
DEB=/usr/bin/python3.11
if [[ ! -x "$DEB" && -x /usr/bin/apt-get && $(id -u) -eq 0 && -f /etc/debian_version ]]; then
    { apt-get install -y -q python3.11 python3.11-dev python3.11-venv \
        || { apt-get update -q && apt-get install -y -q python3.11 python3.11-dev python3.11-venv; }; } >&2 || true
fi
if [[ -x "$DEB" ]] && ok "$DEB"; then echo "$DEB"; exit 0; fi
for cand in python3.11 python3; do
    if p="$(command -v "$cand")" && ok "$p"; then echo "$p"; exit 0; fi
done
echo "no CPython >= 3.11 found: install python3.11 (Debian: apt-get install python3.11) or set PYTHON=" >&2
exit 1
