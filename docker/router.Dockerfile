# syntax=docker/dockerfile:1.7
# isolane-router: the router (HTTP ingress, placement, gRPC client).
#
#   docker build -f docker/router.Dockerfile -t ghcr.io/isolane/isolane-router:0.1.0 .
#
# Built from the repository root (the whole Cargo workspace is the context;
# docker/router.Dockerfile.dockerignore keeps target/ and .git out). The
# toolchain is the one rust-toolchain.toml pins; Cargo.lock is honoured. The
# runtime image is distroless (glibc, libgcc, libstdc++, CA certificates, no
# shell) running as the nonroot user, 65532, which the chart's
# podSecurityContext expects. docs/deploy.md has the details.

ARG RUST_VERSION=1.95.0

FROM docker.io/library/rust:${RUST_VERSION}-slim-bookworm AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/usr/local/cargo/git \
    --mount=type=cache,target=/src/target,id=isolane-target-router \
    cargo build --release --locked -p isolane-router --bin isolane-router \
    && install -D -m 0755 target/release/isolane-router /out/isolane-router

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/isolane-router /usr/local/bin/isolane-router
USER 65532:65532
EXPOSE 8080 9090
ENTRYPOINT ["/usr/local/bin/isolane-router"]
