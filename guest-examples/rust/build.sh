#!/usr/bin/env bash
# Builds a Rust controller project (made by `turtles new --lang rust`) into a component:
#
#   guest-examples/rust/build.sh --project PROJECT_DIR OUT_FILE
#
# Runs `cargo build --release --target wasm32-wasip2` on PROJECT_DIR/Cargo.toml (a wasip2 cdylib
# is a component already) and writes OUT_FILE under a temporary name, then renames it into place,
# so OUT_FILE's folder may be a live controllers folder. The first build of a project starts from
# the Cargo.lock the SDK was tested with (copied next to its Cargo.toml), so it gets the same
# dependency versions. The examples of this repository are built by `cargo xtask guests` instead.
#
# Needs cargo (rustup); the wasm32-wasip2 target is added with rustup when it is missing.
# Environment: CARGO_TARGET_DIR (default PROJECT_DIR/target).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
die() {
    echo "build.sh: $*" >&2
    exit 1
}
if [[ $# -ne 3 || $1 != --project ]]; then
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}" >&2
    exit 2
fi
project=$(cd "$2" && pwd) || die "no project folder $2"
out=$3
[[ -f $project/Cargo.toml ]] || die "$project has no Cargo.toml"
command -v cargo >/dev/null 2>&1 || die "cargo not found: install Rust with rustup (https://rustup.rs)"
target=wasm32-wasip2
if command -v rustup >/dev/null 2>&1; then
    if ! (cd "$project" && rustup target list --installed) | grep -qx "$target"; then
        echo "build.sh: adding the $target target with rustup" >&2
        (cd "$project" && rustup target add "$target") || die "rustup target add $target failed"
    fi
fi
# The crate's name, as its [package] table says.
name=$(awk '/^\[/ { pkg = ($0 == "[package]") } pkg && /^name *=/ { gsub(/^name *= *"|".*$/, ""); print; exit }' "$project/Cargo.toml")
[[ -n $name ]] || die "no package name in $project/Cargo.toml"
# A project made by another turtles binary (another bundle) builds against this one's SDK: its
# path dependency is pointed here, with a message.
sdk_path="$here/turtles-controller"
current=$(sed -n 's/^turtles-controller *= *{ *path *= *"\([^"]*\)".*/\1/p' "$project/Cargo.toml")
if [[ -n $current && $current != "$sdk_path" && $current == */guest-examples/rust/turtles-controller ]]; then
    echo "build.sh: pointing turtles-controller at this turtles' SDK: $sdk_path (was $current)" >&2
    sed -i "s|^turtles-controller *= *{ *path *= *\"[^\"]*\"|turtles-controller = { path = \"$sdk_path\"|" "$project/Cargo.toml"
fi
if [[ ! -f $project/Cargo.lock && -f $here/Cargo.lock ]]; then
    cp "$here/Cargo.lock" "$project/Cargo.lock"
fi
target_dir=${CARGO_TARGET_DIR:-$project/target}
cargo build --release --target "$target" --manifest-path "$project/Cargo.toml" --target-dir "$target_dir" ||
    die "cargo build of $name failed"
wasm="$target_dir/$target/release/${name//-/_}.wasm"
[[ -f $wasm ]] || die "cargo built no $wasm: is the crate a cdylib ([lib] crate-type = [\"cdylib\"])?"
mkdir -p "$(dirname "$out")"
tmp="$(dirname "$out")/.$(basename "$out").tmp"
cp "$wasm" "$tmp"
mv -f "$tmp" "$out"
echo "build.sh: $out ($(( ($(wc -c <"$out") + 1023) / 1024 )) KiB)" >&2
