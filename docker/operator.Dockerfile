# syntax=docker/dockerfile:1.7
# isolane-operator: the operator (controller, leader election, admission webhook).
#
#   docker build -f docker/operator.Dockerfile -t ghcr.io/isolane/isolane-operator:0.1.0 .
#
# Built from the repository root (the whole Cargo workspace is the context;
# docker/operator.Dockerfile.dockerignore keeps target/ and .git out). The
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
    --mount=type=cache,target=/src/target,id=isolane-target-operator \
    cargo build --release --locked -p isolane-operator --bin isolane-operator \
    && install -D -m 0755 target/release/isolane-operator /out/isolane-operator

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/isolane-operator /usr/local/bin/isolane-operator
USER 65532:65532
EXPOSE 9090 9443
ENTRYPOINT ["/usr/local/bin/isolane-operator"]
