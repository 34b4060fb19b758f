#!/bin/sh
# Builds warren's Debian package: the binary, its man page and completions
# (written by the binary itself from its clap definition, so they cannot
# differ from the options it takes), then `cargo deb` with the metadata in
# crates/warren/Cargo.toml. Prints the .deb's path on standard output.
#   packaging/build-deb.sh             the release build (what to ship)
#   packaging/build-deb.sh --dev       the debug build (tests: no release build of minutes)
#   ... --no-build                     package the binary already built (a test
#                                      running under cargo, which holds the build lock)
# WARREN_DEB_OUT: the directory to write the .deb into (default target/debian).
set -eu
cd "$(dirname "$0")/.."
profile=release
dir=release
build=yes
for arg in "$@"; do
    case "$arg" in
        --dev) profile=dev; dir=debug ;;
        --no-build) build=no ;;
        *) echo "usage: build-deb.sh [--dev] [--no-build]" >&2; exit 2 ;;
    esac
done
command -v cargo-deb >/dev/null 2>&1 || cargo install cargo-deb --locked
target="${CARGO_TARGET_DIR:-target}"
if [ "$build" = yes ]; then
    cargo build --locked --profile "$profile" -p warren >&2
fi
rm -rf "$target/$dir/warren-docs"
"$target/$dir/warren" generate-docs "$target/$dir/warren-docs"
out="${WARREN_DEB_OUT:-$target/debian}"
mkdir -p "$out"
# cargo-deb reads the assets' target/release/ as the profile's own directory.
# Release: the binary stripped, its debug symbols (profile.release has
# debug = 1, for backtraces) in a warren-dbgsym .ddeb beside it, as Debian
# ships them. Dev (tests): kept as built, with faster compression.
flags="--dbgsym"
[ "$profile" = dev ] && flags="--fast --no-dbgsym"
cargo deb $flags --no-build --locked -p warren --profile "$profile" --output "$out/warren_${profile}.deb" >&2
echo "$out/warren_${profile}.deb"
