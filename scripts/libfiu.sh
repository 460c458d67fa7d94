#!/usr/bin/env bash
# libfiu (Debian's fiu-utils + libfiu0): LD_PRELOAD wrappers that make fsync/write/pwrite fail
# on demand in a running process (fiu-run starts it, fiu-ctrl flips failure points). The
# integration tier's storage-fault tests need it; installed from Debian's archive like every
# other test dependency. Idempotent; prints the directory holding fiu-run and fiu-ctrl.
set -euo pipefail
if ! command -v fiu-run >/dev/null || ! command -v fiu-ctrl >/dev/null \
    || [[ ! -e /usr/lib/fiu/fiu_posix_preload.so ]]; then
    echo "libfiu: installing fiu-utils libfiu0 (apt-get)" >&2
    "$(dirname "$0")/apt-install.sh" fiu-utils libfiu0 \
        || { echo "libfiu: could not install fiu-utils/libfiu0 with apt-get" >&2; exit 1; }
fi
dirname "$(command -v fiu-ctrl)"
