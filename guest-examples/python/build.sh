#!/usr/bin/env bash
# Builds the Python example controllers and admission policies into WebAssembly components.
#
#   guest-examples/python/build.sh OUT_DIR [NAME...]
#   guest-examples/python/build.sh --project PROJECT_DIR OUT_FILE
#
# Every folder examples/NAME/ with an app.py becomes OUT_DIR/NAME.wasm (only the NAMEs given, if
# any), built by componentize-py with sdk/ (the turtles_controller and turtles_admission
# packages), examples/lib/ (code shared by examples) and examples/NAME/ on the Python path, against
# the world its app.py names on a line of its own (the first such line counts):
#   none, or `# turtles-world: controller`: the repo's wit/, world `controller` (a controller);
#   `# turtles-world: policy`: wit/admission/, world `policy` (an admission policy, written
#   with turtles_admission; e.g. examples/py-defaults).
# Any other world is an error. The pinned componentize-py is installed on first use (pip install
# --target) under $TURTLES_TOOLCHAINS (default: target/toolchains in the repo root). An example
# whose inputs did not change since its last build is skipped. Outputs are written to a temporary
# name and renamed into place, so OUT_DIR may be a live controllers folder.
#
# --project builds a standalone project made by `turtles new --lang python` (PROJECT_DIR/app.py and
# the modules beside it) into OUT_FILE, with this script's own sdk/ and ../../wit (the SDK bundle it
# sits in), never the project's; its app.py's `# turtles-world:` line picks the world as above
# (`turtles new` scaffolds controllers only). The project's *.py files (not tests: test_*.py,
# *_test.py, tests/) are staged in PROJECT_DIR/build/py/, so nothing else in the project is packed
# into the component. The build is skipped when nothing changed since it last wrote OUT_FILE
# (FORCE=1 rebuilds); OUT_FILE is written next to itself under a temporary name and renamed into
# place.
#
# Needs: Python >= 3.9 with pip (Debian: apt-get install python3 python3-pip), and PyPI the first
# time. Environment: PYTHON (default python3), TURTLES_TOOLCHAINS, FORCE=1 rebuilds everything.
set -euo pipefail

COMPONENTIZE_PY_VERSION=0.25.1

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

if [[ $# -lt 1 || $1 == -h || $1 == --help ]]; then
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
    [[ $# -ge 1 ]] && exit 0 || exit 2
fi

die() {
    echo "build.sh: $*" >&2
    exit 1
}

project=
if [[ $1 == --project ]]; then
    [[ $# -eq 3 && -n $2 && -n $3 ]] || die "usage: build.sh --project PROJECT_DIR OUT_FILE"
    [[ -d $2 ]] || die "no project folder $2"
    project=$(cd "$2" && pwd)
    [[ -f $project/app.py ]] ||
        die "$project has no app.py: not a Python controller project (make one with: turtles new --lang python NAME DIR)"
    out_file=$3
    [[ $out_file == */ || -d $out_file ]] && die "OUT_FILE $out_file is a folder: give the .wasm file to write"
else
    out=$1
    shift
fi

# Sets wit_dir, world and package (the SDK package it is written with) from an app.py's
# `# turtles-world: WORLD` line (the first such line counts; none: a controller).
world_of() {
    local w
    w=$(sed -n -E 's/^#[[:space:]]*turtles-world:[[:space:]]*([^[:space:]]*).*/\1/p' "$1" | head -n 1)
    case $w in
    "" | controller) wit_dir=$root/wit world=controller package=turtles_controller ;;
    policy) wit_dir=$root/wit/admission world=policy package=turtles_admission ;;
    *) die "$1: unknown world '$w' on its '# turtles-world:' line (controller or policy)" ;;
    esac
    compgen -G "$wit_dir/*.wit" >/dev/null || die "no WIT in $wit_dir for world $world (an incomplete SDK bundle?)"
    [[ -d $here/sdk/$package ]] || die "no SDK at $here/sdk/$package (an incomplete SDK bundle?)"
}

if [[ -n $project ]]; then
    world_of "$project/app.py"
fi

python=${PYTHON:-python3}
command -v "$python" >/dev/null 2>&1 ||
    die "'$python' not found: install Python >= 3.9 (Debian: apt-get install python3 python3-pip) or set PYTHON"
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 9))' ||
    die "$("$python" --version 2>&1) is too old: componentize-py needs Python >= 3.9"

toolchains=${TURTLES_TOOLCHAINS:-$root/target/toolchains}
tool="$toolchains/componentize-py-$COMPONENTIZE_PY_VERSION"

componentize_py() {
    PYTHONPATH="$tool" PYTHONDONTWRITEBYTECODE=1 "$python" -c \
        'import sys, componentize_py; sys.argv[0] = "componentize-py"; sys.exit(componentize_py.script())' "$@"
}

if [[ ! -f $tool/.installed ]]; then
    "$python" -m pip --version >/dev/null 2>&1 ||
        die "pip is missing for $python: install it (Debian: apt-get install python3-pip) and run again"
    echo "build.sh: installing componentize-py==$COMPONENTIZE_PY_VERSION into $tool" >&2
    rm -rf "$tool.partial"
    mkdir -p "$toolchains"
    # --target installs into a plain folder: no venv package needed, and no clash with a
    # distribution's externally managed Python (PEP 668).
    PIP_ROOT_USER_ACTION=ignore "$python" -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
        --target "$tool.partial" "componentize-py==$COMPONENTIZE_PY_VERSION" ||
        die "could not install componentize-py==$COMPONENTIZE_PY_VERSION from PyPI (offline? no wheel for this platform?)"
    rm -rf "$tool"
    mv "$tool.partial" "$tool"
    touch "$tool/.installed"
fi
version=$(componentize_py --version 2>&1) || die "componentize-py in $tool does not run: $version (delete that folder to reinstall)"
[[ $version == "componentize-py $COMPONENTIZE_PY_VERSION" ]] ||
    die "$tool holds '$version', not $COMPONENTIZE_PY_VERSION: delete that folder to reinstall"

# A digest of every file under the given paths (caches and bytecode excluded).
digest() {
    find "$@" -type f ! -path '*/__pycache__/*' ! -name '*.pyc' -print0 | LC_ALL=C sort -z |
        xargs -0 sha256sum | sha256sum | cut -d' ' -f1
}

if [[ -n $project ]]; then
    out_dir=$(dirname "$out_file")
    mkdir -p "$out_dir" || die "cannot create $out_dir"
    target="$(cd "$out_dir" && pwd)/$(basename "$out_file")"
    stage="$project/build/py"
    stamp="$project/build/.inputs"
    # The project's Python sources, NUL-separated, relative to it: no build outputs, caches, VCS or
    # virtualenv folders, and no tests (test_*.py, *_test.py, tests/), which the component never runs.
    sources() {
        (cd "$project" && find . \( -name build -o -name '.?*' -o -name __pycache__ -o -name node_modules \
            -o -name venv -o -name env -o -name tests \) -prune -o -type f -name '*.py' \
            ! -name 'test_*.py' ! -name '*_test.py' -print0 | LC_ALL=C sort -z)
    }
    inputs="$version $(digest "$root/wit" "$here/sdk") $(sources | (cd "$project" && xargs -0 -r sha256sum) | sha256sum | cut -d' ' -f1) $target"
    # The stamp also holds OUT_FILE's size and mtime: rebuilt if anything else wrote OUT_FILE since.
    if [[ -z ${FORCE:-} && -f $target && -f $stamp && $(cat "$stamp") == "$inputs $(stat -c '%s %y' "$target")" ]]; then
        echo "build.sh: $target is up to date" >&2
        exit 0
    fi
    rm -rf "$stage"
    mkdir -p "$stage" || die "cannot create $stage"
    sources | (cd "$project" && xargs -0 -r cp --parents -t "$stage") || die "cannot stage the sources in $stage"
    [[ -f $stage/app.py ]] || die "staging $project in $stage failed: no app.py there"
    echo "build.sh: $project -> $target" >&2
    tmp="$(dirname "$target")/.$(basename "$target").tmp.$$"
    trap 'rm -f "$tmp"' EXIT
    rm -f "$stamp"
    componentize_py -q -d "$wit_dir" -w "$world" componentize -p "$stage" -p "$here/sdk" app -o "$tmp" ||
        die "componentize-py failed for $project/app.py"
    mv -f "$tmp" "$target"
    echo "$inputs $(stat -c '%s %y' "$target")" >"$stamp"
    echo "build.sh: built $target ($(($(stat -c %s "$target") / 1024)) KiB)" >&2
    exit 0
fi

mkdir -p "$out"
out=$(cd "$out" && pwd)

names=("$@")
if [[ ${#names[@]} -eq 0 ]]; then
    for app in "$here"/examples/*/app.py; do
        names+=("$(basename "$(dirname "$app")")")
    done
fi

common=$(digest "$root/wit" "$here/sdk" "$here/examples/lib")
built=0
skipped=0
for name in "${names[@]}"; do
    dir="$here/examples/$name"
    [[ -f $dir/app.py ]] || die "no example '$name' (want $dir/app.py)"
    world_of "$dir/app.py"
    target="$out/$name.wasm"
    stamp="$out/.$name.wasm.inputs"
    inputs="$version $common $(digest "$dir")"
    # The stamp also holds OUT_FILE's size and mtime: rebuilt if anything else wrote OUT_FILE since.
    if [[ -z ${FORCE:-} && -f $target && -f $stamp && $(cat "$stamp") == "$inputs $(stat -c '%s %y' "$target")" ]]; then
        skipped=$((skipped + 1))
        continue
    fi
    echo "build.sh: $name ($world) -> $target" >&2
    tmp="$out/.$name.wasm.tmp.$$"
    trap 'rm -f "$tmp"' EXIT
    componentize_py -q -d "$wit_dir" -w "$world" componentize \
        -p "$dir" -p "$here/examples/lib" -p "$here/sdk" app -o "$tmp" ||
        die "componentize-py failed for $name"
    mv -f "$tmp" "$target"
    echo "$inputs $(stat -c '%s %y' "$target")" >"$stamp"
    built=$((built + 1))
done
echo "build.sh: $built built, $skipped up to date, in $out" >&2
