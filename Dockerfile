# syntax=docker/dockerfile:1
# kelp's image: a release build on Debian bookworm, run from distroless (glibc, no shell,
# no package manager) as the non-root user 65532. kelp uses rustls (ring), so the
# runtime needs no OpenSSL. Build: docker build -t <registry>/kelp:<version> .
# (see docs/deploy.md).

FROM docker.io/library/rust:1-bookworm AS build
WORKDIR /src
# Only what the binary is built from (the demo dump is compiled in).
COPY Cargo.toml Cargo.lock ./
COPY src src
COPY demo demo
COPY templates templates
COPY static static
COPY docs/openapi.yaml docs/openapi.yaml
COPY benches benches
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin kelp \
 && install -m 0755 target/release/kelp /kelp \
 && /kelp --version

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /kelp /usr/local/bin/kelp
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/kelp"]
CMD ["serve", "--metrics-addr", "0.0.0.0:8080", "--log-format", "json"]
