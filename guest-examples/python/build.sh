#!/usr/bin/env bash
# Builds the Python example controllers into WebAssembly components.
#
#   guest-examples/python/build.sh OUT_DIR [NAME...]
#
# Every folder examples/NAME/ with an app.py becomes OUT_DIR/NAME.wasm (only the NAMEs given, if
# any), built by componentize-py against the repo's wit/ (world `controller`) with sdk/ (the
# turtles_controller package), examples/lib/ (code shared by examples) and examples/NAME/ on the
# Python path. The pinned componentize-py is installed on first use (pip install --target) under
# $TURTLES_TOOLCHAINS (default: target/toolchains in the repo root). An example whose inputs did
# not change since its last build is skipped. Outputs are written to a temporary name and renamed
# into place, so OUT_DIR may be a live controllers folder.
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
out=$1
shift

die() {
    echo "build.sh: $*" >&2
    exit 1
}

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
    target="$out/$name.wasm"
    stamp="$out/.$name.wasm.inputs"
    inputs="$version $common $(digest "$dir")"
    if [[ -z ${FORCE:-} && -f $target && -f $stamp && $(cat "$stamp") == "$inputs" ]]; then
        skipped=$((skipped + 1))
        continue
    fi
    echo "build.sh: $name -> $target" >&2
    tmp="$out/.$name.wasm.tmp.$$"
    trap 'rm -f "$tmp"' EXIT
    componentize_py -q -d "$root/wit" -w controller componentize \
        -p "$dir" -p "$here/examples/lib" -p "$here/sdk" app -o "$tmp" ||
        die "componentize-py failed for $name"
    mv -f "$tmp" "$target"
    echo "$inputs" >"$stamp"
    built=$((built + 1))
done
echo "build.sh: $built built, $skipped up to date, in $out" >&2
