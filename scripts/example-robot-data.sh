#!/bin/sh
# Prints the absolute path of the `robots` folder of example-robot-data (the URDFs of Panda, UR5,
# Talos, Solo, SO-100, …: https://github.com/Gepetto/example-robot-data), for the tests of
# robot-model that load real robots. In this order:
#
# 1. $EXAMPLE_ROBOT_DATA, if set: that `robots` folder (refused if it is not one).
# 2. The installed Python package: its module `example_robot_data` if importable (older
#    releases: the robots are in `cmeel.prefix/share/example-robot-data/robots` above the
#    module), else the installed distribution `example-robot-data` (release 6 installs no
#    module, only `cmeel.prefix/share/example-robot-data/robots` in site-packages).
# 3. Otherwise it installs the package itself, once, without its dependencies:
#    `python3 -m pip install --no-deps --target "$CACHE/pydeps" example-robot-data`, with
#    CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/hil-example-robot-data, and prints the robots folder
#    found under that target.
#
# Exits non-zero with a message on stderr when none of this gives a robots folder (pip failing
# included). Set PYTHON to use another interpreter than python3.
set -eu

PY=${PYTHON:-python3}
me=example-robot-data.sh

fail() {
    echo "$me: $*" >&2
    exit 1
}

# A robots folder: holds at least one *_description folder.
is_robots() {
    [ -d "$1" ] && ls -d "$1"/*_description >/dev/null 2>&1
}

if [ -n "${EXAMPLE_ROBOT_DATA:-}" ]; then
    if is_robots "$EXAMPLE_ROBOT_DATA"; then
        (cd "$EXAMPLE_ROBOT_DATA" && pwd -P)
        exit 0
    fi
    fail "EXAMPLE_ROBOT_DATA=$EXAMPLE_ROBOT_DATA is not the robots folder of example-robot-data (no */*_description in it)"
fi

command -v "$PY" >/dev/null 2>&1 || fail "$PY not found: install Python 3, or set EXAMPLE_ROBOT_DATA to the robots folder of example-robot-data"

found=$("$PY" - <<'EOF' 2>/dev/null || true
import os, sys
tail = os.path.join("share", "example-robot-data", "robots")
def up(start):
    d = os.path.abspath(start)
    while True:
        for c in (os.path.join(d, "cmeel.prefix", tail), os.path.join(d, tail)):
            if os.path.isdir(c):
                return c
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent
try:
    import example_robot_data as m
    for name in ("EXAMPLE_ROBOT_DATA_MODEL_DIR",):
        for holder in (m, getattr(m, "path", None)):
            v = getattr(holder, name, None) if holder is not None else None
            if v and os.path.isdir(v):
                print(os.path.realpath(v)); sys.exit(0)
    r = up(os.path.dirname(m.__file__))
    if r:
        print(os.path.realpath(r)); sys.exit(0)
except ImportError:
    pass
try:
    from importlib import metadata
    dist = metadata.distribution("example-robot-data")
    for rel in (os.path.join("cmeel.prefix", tail), tail):
        p = str(dist.locate_file(rel))
        if os.path.isdir(p):
            print(os.path.realpath(p)); sys.exit(0)
except Exception:
    pass
sys.exit(1)
EOF
)
if [ -n "$found" ] && is_robots "$found"; then
    echo "$found"
    exit 0
fi

cache=${XDG_CACHE_HOME:-$HOME/.cache}/hil-example-robot-data
target=$cache/pydeps

find_in_target() {
    [ -d "$target" ] || return 0
    find "$target" -type d -path '*/share/example-robot-data/robots' 2>/dev/null | head -n 1
}

robots=$(find_in_target)
if [ -z "$robots" ]; then
    mkdir -p "$cache" || fail "cannot create $cache"
    # Several test processes may get here at once: one installs, the others wait for it.
    if command -v flock >/dev/null 2>&1; then
        exec 9>"$cache/lock"
        flock 9
    fi
    robots=$(find_in_target)
    if [ -z "$robots" ]; then
        tmp=$cache/pydeps.tmp.$$
        rm -rf "$tmp"
        echo "$me: example-robot-data not installed: installing it into $target" >&2
        if ! "$PY" -m pip install --quiet --disable-pip-version-check --no-deps --target "$tmp" example-robot-data >&2; then
            rm -rf "$tmp"
            fail "pip could not install example-robot-data into $target (see pip's message above); install it yourself (python3 -m pip install example-robot-data) or set EXAMPLE_ROBOT_DATA to its robots folder"
        fi
        rm -rf "$target"
        mv "$tmp" "$target" || fail "cannot move $tmp to $target"
        robots=$(find_in_target)
    fi
fi
[ -n "$robots" ] && is_robots "$robots" ||
    fail "no share/example-robot-data/robots under $target after installing example-robot-data"
(cd "$robots" && pwd -P)
