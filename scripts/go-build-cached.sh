# shellcheck shell=bash
# A Go binary built from the Go module proxy, cached by version: the shared shape of
# e2e/tools/build-kind.sh, build-promtool.sh, build-coredns.sh and scripts/build-seaweedfs.sh.
# Sourced (`. scripts/go-build-cached.sh`), not run.
#
# Role: one place for what each of those builds does around its `go` command:
#   go_cached_begin NAME VERSION BINARY [dir|path]
#       the cache dir $OUT = $METAQUORUM_CACHE/NAME-VERSION (default ~/.cache/metaquorum) with
#       the binary at $BIN/BINARY ($BIN = $OUT/bin); when it is there already, print it and exit
#       0 at once; else check for go, take the lock $OUT/.lock (fd 9: concurrent callers
#       serialise, the second finds the first's binary), and set the build env: GOTOOLCHAIN=local
#       (never download a toolchain), CGO_ENABLED=0, GOFLAGS=-p=$GO_BUILD_P (default 1: the
#       machine is shared). What is printed, on stdout as its last line: `dir` (default) $BIN,
#       `path` $BIN/BINARY.
#   go_cached_install PACKAGE
#       `go install PACKAGE@VERSION` (a module without replace directives), then done.
#   go_cached_build PACKAGE [NICE]
#       `go build PACKAGE` (at niceness NICE when given) in the wrapper module the caller wrote
#       in the current directory ($OUT/src; -mod=mod, so `go` completes its go.sum), then done.
# Both build -trimpath -ldflags "-s -w", log the time on stderr ([build-NAME] ...) and die with
# one line naming the step that failed.
#
# Invariants: the binary appears under its final name only once complete (built to a temporary
# name, then mv), so an interrupted build is never taken for a cached one; one build per
# NAME-VERSION at a time; the version is in the path, so a new version never reuses an old
# binary; stdout carries only the printed location (go's output goes to stderr).

log() { echo "[build-$GC_NAME] $*" >&2; }
die() { echo "[build-$GC_NAME] ERROR: $*" >&2; exit 1; }

_gc_print() {
    if [[ "$GC_PRINT" == path ]]; then echo "$BIN/$GC_BINARY"; else echo "$BIN"; fi
}

go_cached_begin() {
    GC_NAME="$1" GC_VERSION="$2" GC_BINARY="$3" GC_PRINT="${4:-dir}"
    local cache="${METAQUORUM_CACHE:-$HOME/.cache/metaquorum}"
    OUT="$cache/$GC_NAME-$GC_VERSION"
    BIN="$OUT/bin"
    if [[ -x "$BIN/$GC_BINARY" ]]; then _gc_print; exit 0; fi
    command -v go >/dev/null || die "go not found: install Go (Debian's golang-go: scripts/apt-install.sh, or go.dev)"
    mkdir -p "$OUT"
    exec 9>"$OUT/.lock"
    flock 9
    if [[ -x "$BIN/$GC_BINARY" ]]; then _gc_print; exit 0; fi
    export GOFLAGS="-p=${GO_BUILD_P:-1}" GOTOOLCHAIN=local CGO_ENABLED=0
    GC_T0=$SECONDS
}

_gc_done() {
    log "$GC_NAME $GC_VERSION built in $((SECONDS - GC_T0)) s ($(du -h "$BIN/$GC_BINARY" | cut -f1))"
    _gc_print
}

go_cached_install() {
    local pkg="$1"
    rm -rf "$OUT/tmp"
    GOBIN="$OUT/tmp" go install -trimpath -ldflags "-s -w" "$pkg@$GC_VERSION" >&2 \
        || die "go install $pkg@$GC_VERSION failed (see above)"
    mkdir -p "$BIN"
    mv "$OUT/tmp/$GC_BINARY" "$BIN/$GC_BINARY"
    rmdir "$OUT/tmp"
    _gc_done
}

go_cached_build() {
    local pkg="$1" nice=(); [[ -n "${2:-}" ]] && nice=(nice -n "$2")
    mkdir -p "$BIN"
    GOFLAGS="-mod=mod $GOFLAGS" "${nice[@]}" go build -trimpath -ldflags "-s -w" -o "$BIN/$GC_BINARY.tmp" \
        "$pkg" >&2 || die "go build $pkg ($GC_VERSION) failed (see above)"
    mv "$BIN/$GC_BINARY.tmp" "$BIN/$GC_BINARY"
    _gc_done
}
