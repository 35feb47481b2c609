#!/usr/bin/env bash
# Installs the Debian packages Sluice needs, only those that are missing.
# Idempotent: with everything present it changes nothing and asks no network.
# Runs `apt-get update` only when something has to be installed.
set -euo pipefail

packages=(
  build-essential   # gcc, make
  cmake             # the build
  ninja-build       # its generator (Makefile, docs/architecture.md "Build")
  clang             # second compiler, libFuzzer
  libclang-rt-14-dev # sanitizer and libFuzzer runtimes for clang
  pkg-config
  libxxhash-dev     # XXH3-64 / XXH32 (header-only use, inline)
  libcmocka-dev     # unit tests
  liburing-dev      # io_uring event loop (server)
  libargon2-dev     # password hashing (server)
  libssl-dev        # TLS (server doors, libsluice), SHA-256 of access tokens
  libwslay-dev      # WebSocket framing (server door, libsluice)
  libzip-dev        # GetSnapshot ZIP archives (server)
  libmicrohttpd-dev # the HTTP API's server (server/http.c)
  libjson-c-dev     # JSON of the HTTP API (src/rest)
  libcurl4-openssl-dev # HTTP client: the OpenTelemetry exporter (server), the HTTP API tests
  libnghttp2-dev    # HTTP/2 server of the telemetry tests' OTLP/gRPC receiver (tests only)
)
# AES-256-GCM for encryption at rest (src/auth/aead.c); Debian builds it for
# amd64 only, elsewhere the build falls back to OpenSSL's EVP.
if [ "$(dpkg --print-architecture 2>/dev/null)" = amd64 ]; then
  packages+=(libipsec-mb-dev)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "deps.sh: installing ${missing[*]}" >&2
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
