#!/usr/bin/env bash
# Proves that the no_std / no-alloc check can fail: builds copies of this crate with one
# violation each (an allocation; a use of std) and expects each build to be refused with the
# error that names it. Run by .ci/run after the real check.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
expect_refused() {
  local name=$1 expected=$2 code=$3
  mkdir -p "$work/$name/src"
  sed "s|path = \"../control-core\"|path = \"$here/../control-core\"|" "$here/Cargo.toml" > "$work/$name/Cargo.toml"
  { cat "$here/src/main.rs"; printf '%s\n' "$code"; } > "$work/$name/src/main.rs"
  if out=$(cd "$work/$name" && CARGO_TARGET_DIR="$here/target/self-test" \
      cargo rustc --release -- -C link-arg=-nostartfiles 2>&1); then
    echo "self-test FAILED: a build with $name was accepted"; exit 1
  fi
  grep -q "$expected" <<<"$out" || { echo "self-test FAILED: $name refused for another reason:"; echo "$out" | tail -5; exit 1; }
  echo "self-test: a build with $name is refused ($expected)"
}
expect_refused allocation "no global memory allocator found" \
  'extern crate alloc;
#[unsafe(no_mangle)]
pub extern "C" fn allocates() -> usize { *core::hint::black_box(alloc::boxed::Box::new(5usize)) }'
expect_refused std "duplicate lang item" \
  'extern crate std;
#[unsafe(no_mangle)]
pub extern "C" fn uses_std() -> u32 { std::process::id() }'
