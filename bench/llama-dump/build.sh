#!/bin/sh
# Builds dump (dump.c) against the llama.cpp libraries node-llama-cpp 3.21.1 ships, with the
# headers of the same llama.cpp (from the git bundle in its package). Needs gcc, git and
# node-llama-cpp where `npm run bench:vs` installs it ($NLC_DIR). Output: $OUT (default
# /tmp/llama-dump/dump); run it with BINS set to the printed libraries folder.
set -e
NLC_DIR=${NLC_DIR:-$HOME/.cache/llama-ts/oracles/node-llama-cpp-3.21.1}
OUT=${OUT:-/tmp/llama-dump/dump}
BINS=$NLC_DIR/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
SRC=$(dirname "$OUT")/llama.cpp
mkdir -p "$(dirname "$OUT")"
[ -d "$SRC" ] || git -c advice.detachedHead=false clone -q "$NLC_DIR/node_modules/node-llama-cpp/llama/gitRelease.bundle" "$SRC"
gcc -O1 -o "$OUT" "$(dirname "$0")/dump.c" -I"$SRC/include" -I"$SRC/ggml/include" -L"$BINS" \
  -l:libllama.v0.4.0.so -l:libggml-base.so -l:libggml.v0.4.0.so -Wl,-rpath,"$BINS"
echo "built $OUT; run with BINS=$BINS"
