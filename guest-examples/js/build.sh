#!/usr/bin/env bash
# Builds the JavaScript example controllers into WebAssembly components:
#   guest-examples/js/build.sh OUT_DIR [NAME...]
# Every examples/NAME.js (or just the NAMEs given) becomes OUT_DIR/NAME.wasm, a component of the
# world `controller` in the repository's wit/, made by componentize-js (SpiderMonkey). Installs
# the pinned toolchain into guest-examples/js/node_modules with `npm ci` when it is missing.
# Needs: node >= 20.6 and npm (Debian: apt-get install nodejs npm); the npm registry the first
# time only.
set -euo pipefail

die() {
  echo "build.sh: $*" >&2
  exit 1
}

[ $# -ge 1 ] || die "usage: $0 OUT_DIR [NAME...]   (builds examples/NAME.js into OUT_DIR/NAME.wasm)"
out_arg=$1
shift

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
wit="$root/wit"
[ -f "$wit/controller.wit" ] || die "no WIT at $wit/controller.wit"

command -v node >/dev/null 2>&1 || die "node is missing: install Node.js >= 20.6 (Debian: apt-get install nodejs npm)"
command -v npm >/dev/null 2>&1 || die "npm is missing: install it (Debian: apt-get install npm)"
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 20 ] || die "node $(node --version) is too old: componentize-js needs Node.js >= 20"

mkdir -p "$out_arg"
out=$(cd "$out_arg" && pwd)

# The toolchain, exactly as package-lock.json pins it.
cjs="$here/node_modules/@bytecodealliance/componentize-js"
want=$(node -p 'require(process.argv[1]).devDependencies["@bytecodealliance/componentize-js"]' "$here/package.json")
have=$(node -p 'try { require(process.argv[1]).version } catch { "" }' "$cjs/package.json")
if [ "$have" != "$want" ] || [ ! -d "$here/node_modules/@bytecodealliance/preview2-shim" ]; then
  echo "build.sh: installing the toolchain (componentize-js $want) with npm ci" >&2
  (cd "$here" && npm ci --prefer-offline --no-audit --no-fund --loglevel=error) ||
    die "npm ci failed in $here: is the npm registry reachable (npm config get registry)?"
fi
[ -f "$cjs/src/cli.js" ] || die "componentize-js is not installed in $here/node_modules"

# componentize-js maps the current directory to / for the module loader: run from here so that
# examples/*.js can import ../sdk/ and ./lib/.
cd "$here"
if [ $# -gt 0 ]; then
  names=("$@")
else
  names=()
  for f in examples/*.js; do
    names+=("$(basename "$f" .js)")
  done
fi
[ ${#names[@]} -gt 0 ] || die "no examples/*.js to build"

for name in "${names[@]}"; do
  src="examples/$name.js"
  [ -f "$src" ] || die "no such example: $here/$src"
  tmp="$out/.$name.wasm.tmp"
  rm -f "$tmp"
  start=$(date +%s)
  if ! node "$cjs/src/cli.js" "$src" --wit "$wit" --world-name controller \
    -d http fetch-event -o "$tmp"; then
    rm -f "$tmp"
    die "componentize-js failed for $src"
  fi
  [ -s "$tmp" ] || die "componentize-js wrote nothing for $src"
  # Rename into place: a running turtles watching OUT_DIR never sees half a file.
  mv -f "$tmp" "$out/$name.wasm"
  echo "built $out/$name.wasm ($(($(stat -c %s "$out/$name.wasm") / 1024)) KiB, $(($(date +%s) - start)) s)"
done
