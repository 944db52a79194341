#!/usr/bin/env bash
# Builds the JavaScript example controllers into WebAssembly components:
#   guest-examples/js/build.sh OUT_DIR [NAME...]
#   guest-examples/js/build.sh --project PROJECT_DIR OUT_FILE
# Every examples/NAME.js (or just the NAMEs given) becomes OUT_DIR/NAME.wasm, a component of the
# world `controller` in the repository's wit/, made by componentize-js (SpiderMonkey). Installs
# the pinned toolchain into guest-examples/js/node_modules with `npm ci` when it is missing.
#
# Another world: a file whose first 30 lines hold the marker line
#   // @turtles-world WIT_DIR WORLD
# is built against the world WORLD of the WIT package in WIT_DIR (relative to the repository,
# under wit/). Admission policies (sdk/turtles-admission.js, e.g. examples/js-owner-policy.js)
# carry `// @turtles-world wit/admission policy`. No marker: `wit controller`.
# Needs: node >= 20.6 and npm (Debian: apt-get install nodejs npm); the npm registry the first
# time only.
#
# --project builds a standalone project made by `turtles new --lang js` (PROJECT_DIR/controller.js
# and the modules beside it) into OUT_FILE, with this script's own sdk/ and ../../wit (the SDK
# bundle it sits in), never the project's. The project imports the SDK as if it were a folder
# turtles-sdk/ at its root ('./turtles-sdk/turtles-controller.js'): its *.js, *.mjs and *.json files
# (not tests, build/, node_modules/ or dot folders) are staged in PROJECT_DIR/build/stage/ with a
# copy of sdk/ in build/stage/turtles-sdk/, and componentize-js runs there. Under node,
# testing/register.js resolves those specifiers to sdk/ (and turtles-sdk/testing/ to testing/,
# the fakes for the project's unit tests). The build is skipped when
# nothing changed since it last wrote OUT_FILE (FORCE=1 rebuilds); OUT_FILE is written next to
# itself under a temporary name and renamed into place.
set -euo pipefail

die() {
  echo "build.sh: $*" >&2
  exit 1
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
wit="$root/wit"

project=
if [ "${1:-}" = --project ]; then
  [ $# -eq 3 ] && [ -n "$2" ] && [ -n "$3" ] || die "usage: $0 --project PROJECT_DIR OUT_FILE"
  [ -d "$2" ] || die "no project folder $2"
  project=$(cd "$2" && pwd)
  [ -f "$project/controller.js" ] ||
    die "$project has no controller.js: not a JavaScript controller project (make one with: turtles new --lang js NAME DIR)"
  [ ! -e "$project/turtles-sdk" ] || die "$project/turtles-sdk is in the way: that name is the SDK's in the build"
  [ -f "$here/sdk/turtles-controller.js" ] || die "no SDK at $here/sdk/turtles-controller.js (an incomplete SDK bundle?)"
  case $3 in
    */ | */. | */.. | . | ..) die "OUT_FILE $3 is a folder: give the .wasm file to write" ;;
  esac
  [ ! -d "$3" ] || die "OUT_FILE $3 is a folder: give the .wasm file to write"
  out_file=$3
else
  [ $# -ge 1 ] || die "usage: $0 OUT_DIR [NAME...]   (builds examples/NAME.js into OUT_DIR/NAME.wasm)"
  out_arg=$1
  shift
fi
[ -f "$wit/controller.wit" ] || die "no WIT at $wit/controller.wit"

# The WIT folder and world an entry file targets, into entry_wit (absolute) and entry_world: from
# its marker line `// @turtles-world WIT_DIR WORLD` (see the header), else the controller world.
world_of() {
  local head spec dir world
  head=$(head -n 30 "$1")
  if ! grep -qE '^//[[:space:]]*@turtles-world' <<<"$head"; then
    entry_wit=$wit
    entry_world=controller
    return
  fi
  spec=$(sed -nE 's#^//[[:space:]]*@turtles-world[[:space:]]+([^[:space:]]+)[[:space:]]+([^[:space:]]+)[[:space:]]*$#\1 \2#p' <<<"$head" | head -n 1)
  [ -n "$spec" ] || die "$1: malformed marker: want a line \`// @turtles-world WIT_DIR WORLD\` (e.g. wit/admission policy)"
  dir=${spec% *}
  world=${spec#* }
  dir=${dir%/}
  [[ $dir =~ ^wit(/[A-Za-z0-9_][A-Za-z0-9._-]*)*$ ]] && [[ $dir != *..* ]] ||
    die "$1: the marker's WIT_DIR $dir is not a folder under wit/ (e.g. wit/admission)"
  compgen -G "$root/$dir/*.wit" >/dev/null || die "$1: the marker's WIT_DIR $root/$dir holds no .wit file"
  [[ $world =~ ^[a-z][a-z0-9-]*$ ]] || die "$1: the marker's WORLD $world is not a WIT world name"
  entry_wit=$root/$dir
  entry_world=$world
}

command -v node >/dev/null 2>&1 || die "node is missing: install Node.js >= 20.6 (Debian: apt-get install nodejs npm)"
command -v npm >/dev/null 2>&1 || die "npm is missing: install it (Debian: apt-get install npm)"
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 20 ] || die "node $(node --version) is too old: componentize-js needs Node.js >= 20"

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

if [ -n "$project" ]; then
  out_dir=$(dirname "$out_file")
  mkdir -p "$out_dir" || die "cannot create $out_dir"
  target="$(cd "$out_dir" && pwd)/$(basename "$out_file")"
  stage="$project/build/stage"
  stamp="$project/build/.inputs"
  # The project's sources for the component, NUL-separated, relative to the project: no build
  # outputs, dependencies, dot folders, and no tests (node --test would find staged copies).
  sources() {
    (cd "$project" && find . \( -name build -o -name node_modules -o -name turtles-sdk -o -name test -o -name '.?*' \) -prune \
      -o -type f \( -name '*.js' -o -name '*.mjs' -o -name '*.json' \) \
      ! -name '*.test.*' ! -name '*-test.*' ! -name '*_test.*' ! -name 'test-*' ! -name 'test.*' -print0 |
      LC_ALL=C sort -z)
  }
  digest() {
    (cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
  }
  inputs="componentize-js $have $(digest "$wit") $(digest "$here/sdk") $(sources | (cd "$project" && xargs -0 -r sha256sum) | sha256sum | cut -d' ' -f1) $target"
  # The stamp also holds OUT_FILE's size and mtime: rebuilt if anything else wrote OUT_FILE since.
  if [ -z "${FORCE:-}" ] && [ -f "$target" ] && [ -f "$stamp" ] &&
    [ "$(cat "$stamp")" = "$inputs $(stat -c '%s %y' "$target")" ]; then
    echo "build.sh: $target is up to date" >&2
    exit 0
  fi
  rm -rf "$stage" "$stamp"
  mkdir -p "$stage" || die "cannot create $stage"
  sources | (cd "$project" && xargs -0 -r cp --parents -t "$stage") || die "cannot stage the sources in $stage"
  cp -r "$here/sdk" "$stage/turtles-sdk" || die "cannot copy the SDK into $stage"
  tmp="$(dirname "$target")/.$(basename "$target").tmp.$$"
  trap 'rm -f "$tmp"' EXIT
  start=$(date +%s)
  # From build/stage/, './turtles-sdk/turtles-controller.js' is the staged SDK. (componentize-js
  # maps the current directory to /, but its loader cannot read absolute specifiers: relative
  # ones only.)
  world_of "$project/controller.js"
  if ! (cd "$stage" && node "$cjs/src/cli.js" controller.js --wit "$entry_wit" --world-name "$entry_world" \
    -d http fetch-event -o "$tmp"); then
    # componentize-js does not say where a syntax error is: node does.
    while IFS= read -r -d '' f; do
      case $f in
        *.js | *.mjs)
          if ! err=$(node --input-type=module --check <"$project/$f" 2>&1); then
            echo "${err%%$'\n'    at *}" | sed "s#^\[stdin\]#$project/${f#./}#" >&2
          fi
          ;;
      esac
    done < <(sources)
    die "componentize-js failed for $project/controller.js"
  fi
  [ -s "$tmp" ] || die "componentize-js wrote nothing for $project/controller.js"
  # Rename into place: a running turtles watching the folder never sees half a file.
  mv -f "$tmp" "$target"
  echo "$inputs $(stat -c '%s %y' "$target")" >"$stamp"
  echo "built $target ($(($(stat -c %s "$target") / 1024)) KiB, $(($(date +%s) - start)) s)"
  exit 0
fi

mkdir -p "$out_arg"
out=$(cd "$out_arg" && pwd)

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
  world_of "$src"
  start=$(date +%s)
  if ! node "$cjs/src/cli.js" "$src" --wit "$entry_wit" --world-name "$entry_world" \
    -d http fetch-event -o "$tmp"; then
    rm -f "$tmp"
    die "componentize-js failed for $src"
  fi
  [ -s "$tmp" ] || die "componentize-js wrote nothing for $src"
  # Rename into place: a running turtles watching OUT_DIR never sees half a file.
  mv -f "$tmp" "$out/$name.wasm"
  echo "built $out/$name.wasm ($(($(stat -c %s "$out/$name.wasm") / 1024)) KiB, $(($(date +%s) - start)) s)"
done
