#!/bin/sh
# Builds warren's Debian package: the binary, its man page and completions
# (written by the binary itself from its clap definition, so they cannot
# differ from the options it takes), then `cargo deb` with the metadata in
# crates/warren/Cargo.toml. Prints the .deb's path on standard output.
#   packaging/build-deb.sh          the release build (what to ship)
#   packaging/build-deb.sh --dev    the debug build (tests: no release build of minutes)
set -eu
cd "$(dirname "$0")/.."
profile=release
dir=release
if [ "${1:-}" = --dev ]; then
    profile=dev
    dir=debug
fi
command -v cargo-deb >/dev/null 2>&1 || cargo install cargo-deb --locked
cargo build --locked --profile "$profile" -p warren >&2
target="${CARGO_TARGET_DIR:-target}"
rm -rf "$target/$dir/warren-docs"
"$target/$dir/warren" generate-docs "$target/$dir/warren-docs"
mkdir -p "$target/debian"
# cargo-deb reads the assets' target/release/ as the profile's own directory.
cargo deb --no-build --locked -p warren --profile "$profile" --output "$target/debian/warren_${profile}.deb" >&2
echo "$target/debian/warren_${profile}.deb"
