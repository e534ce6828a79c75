#!/usr/bin/env bash
# Builds the web example into examples/web/site: the wasm32 library, wasm-bindgen's JavaScript
# beside it (wasm-bindgen-cli at the lock's version, installed on first use), the page and the
# detections. An argument names another Cargo profile than `release`: CI builds `dev` (much
# faster to build).
set -euo pipefail
cd "$(dirname "$0")/../.."
profile=${1:-release}
target_dir="${CARGO_TARGET_DIR:-target}"

version=$(grep -A1 '^name = "wasm-bindgen"$' Cargo.lock | sed -n 's/^version = "\(.*\)"/\1/p')
bindgen="${WASM_BINDGEN:-$(command -v wasm-bindgen || true)}"
if [[ -z "$bindgen" || "$("$bindgen" --version)" != "wasm-bindgen $version" ]]; then
    echo "installing wasm-bindgen-cli $version (it must equal the lock's wasm-bindgen)"
    cargo install -q wasm-bindgen-cli --version "=$version" --no-default-features
    bindgen="$(command -v wasm-bindgen || echo "$HOME/.cargo/bin/wasm-bindgen")"
fi
rustup target add wasm32-unknown-unknown >/dev/null 2>&1 || true

cargo build -q -p burn-dml-ops-web-example --target wasm32-unknown-unknown --profile "$profile"
dir=$([[ "$profile" == dev ]] && echo debug || echo "$profile")
site=examples/web/site
mkdir -p "$site"
"$bindgen" --target web --no-typescript --out-dir "$site/pkg" \
    "$target_dir/wasm32-unknown-unknown/$dir/burn_dml_ops_web_example.wasm"
cp examples/web/www/index.html examples/web/www/detections.json "$site/"
echo "built $site: serve it with python3 -m http.server -b 127.0.0.1 -d $site 8000"
