# Sourced by the *-tools.sh scripts: build_tool builds one cached tool.
#
#   build_tool <tag> <name> <out> <module dir> <package> <ldflags>
#
# builds <package> from the Go module in <module dir> into <out>, unless
# <out> is there already. Two builds of the same tool at once (a `make dev`
# in one terminal and a `make test` in another) do not break each other:
# the second waits for the first under a lock on <out>.lock and then finds
# the tool built, and each build writes a temporary file of its own, moved
# into place in one step. While it builds, it says every 30 seconds
# (BUILD_TOOL_PROGRESS_SECONDS) what it is building and for how long.

build_tool() {
  local tag=$1 name=$2 out=$3 module=$4 pkg=$5 ldflags=$6
  mkdir -p "$(dirname "$out")"
  if [[ -x "$out" ]]; then
    echo "$tag: $name cached ($out)"
    return
  fi
  local fd
  exec {fd}>"$out.lock"
  # Without flock (macOS) two builds both build; their files still do not
  # collide.
  if command -v flock >/dev/null && ! flock -n "$fd"; then
    echo "$tag: another build of $name is running; waiting for it..."
    flock "$fd"
  fi
  if [[ -x "$out" ]]; then
    echo "$tag: $name built by the other build ($out)"
    exec {fd}>&-
    return
  fi
  echo "$tag: building $name from $pkg (cold builds take minutes)..."
  local start=$SECONDS tmp="$out.tmp.$$"
  (cd "$module" && CGO_ENABLED=0 GOFLAGS= go build -trimpath -ldflags "$ldflags" -o "$tmp" "$pkg") &
  local build=$!
  while ! wait_for "$build" "${BUILD_TOOL_PROGRESS_SECONDS:-30}"; do
    echo "$tag: still building $name ($((SECONDS - start))s)..."
  done
  if ! wait "$build"; then
    rm -f "$tmp"
    exec {fd}>&-
    echo "$tag: building $name failed after $((SECONDS - start))s" >&2
    return 1
  fi
  mv -f "$tmp" "$out"
  exec {fd}>&-
  echo "$tag: built $name in $((SECONDS - start))s"
}

# wait_for <pid> <seconds>: true once <pid> has ended, false when it is
# still running after <seconds>.
wait_for() {
  local pid=$1 i
  for ((i = 0; i < $2 * 5; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.2
  done
  ! kill -0 "$pid" 2>/dev/null
}
