# syntax=docker/dockerfile:1
#
# askbus as a container image: the server binary on distroless (glibc, no shell), run as
# the unprivileged `nonroot` user (65532), its SQLite file in the /data volume.
#
#   docker build -t askbus .
#   docker run -p 4717:4717 -v askbus-data:/data \
#     -e ASKBUS_TOKEN="$(openssl rand -hex 32)" -e ASKBUS_ALLOWED_HOSTS=askbus.example.com askbus
#
# It listens on 0.0.0.0:4717, so it refuses to start without a token (ASKBUS_TOKEN) and the
# host names clients reach it by (ASKBUS_ALLOWED_HOSTS); every other flag is an ASKBUS_*
# variable too (`askbus --help`). deploy/ runs two of it on Redis.

# The C parts (SQLite, mimalloc, aws-lc) build with the C compiler the image has.
FROM rust:1.95.0-slim-bookworm AS build
WORKDIR /src
COPY . .
# The image's toolchain is the one rust-toolchain.toml pins; naming it skips the file's
# extra components (rustfmt, clippy), which a build does not need.
ENV RUSTUP_TOOLCHAIN=1.95.0 \
    CARGO_PROFILE_RELEASE_STRIP=symbols
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p askbus --features server \
 && cp target/release/askbus /askbus \
 && mkdir /data

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /askbus /usr/local/bin/askbus
COPY --from=build --chown=65532:65532 /data /data
WORKDIR /data
VOLUME /data
USER 65532:65532
ENV ASKBUS_LISTEN=0.0.0.0:4717 \
    ASKBUS_STORE=sqlite:/data/askbus.db
EXPOSE 4717
# No curl in the image: the binary asks itself (`askbus probe`, GET /health on loopback).
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 \
  CMD ["/usr/local/bin/askbus", "probe"]
ENTRYPOINT ["/usr/local/bin/askbus"]
