# syntax=docker/dockerfile:1.7
# isolane-node: a runtime node (V8 isolate pools, gRPC). The v8 crate downloads its prebuilt static library during the build (network needed; offline, set RUSTY_V8_ARCHIVE).
#
#   docker build -f docker/node.Dockerfile -t ghcr.io/isolane/isolane-node:0.1.0 .
#
# Built from the repository root (the whole Cargo workspace is the context;
# docker/node.Dockerfile.dockerignore keeps target/ and .git out). The
# toolchain is the one rust-toolchain.toml pins; Cargo.lock is honoured. The
# runtime image is distroless (glibc, libgcc, libstdc++, CA certificates, no
# shell) running as the nonroot user, 65532, which the chart's
# podSecurityContext expects. docs/deploy.md has the details.

ARG RUST_VERSION=1.95.0

FROM docker.io/library/rust:${RUST_VERSION}-slim-bookworm AS build
# The engine compiles ada (its URL parser, C++) from the ada-url crate.
RUN apt-get update && apt-get install -y --no-install-recommends g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/usr/local/cargo/git \
    --mount=type=cache,target=/src/target,id=isolane-target-node \
    cargo build --release --locked -p isolane-node --bin isolane-node \
    && install -D -m 0755 target/release/isolane-node /out/isolane-node

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/isolane-node /usr/local/bin/isolane-node
USER 65532:65532
EXPOSE 9090 7070
ENTRYPOINT ["/usr/local/bin/isolane-node"]
