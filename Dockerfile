# syntax=docker/dockerfile:1
#
# Seahaven server image: a static binary on distroless, running as nonroot,
# serving its default world from the fixtures built into it on :8000. By
# default the binary is cmd/seahaven (the examples' company world, fixture
# acme); a world author builds their own command of the module the same way
# (docs/authoring.md), and it is installed as seahaven all the same.
#
#   docker build -t seahaven .
#   docker build --build-arg CMD=./cmd/library -t library .
#   docker run --rm -p 8000:8000 -e SEAHAVEN_TOKEN=change-me seahaven
#
# Configuration is by SEAHAVEN_* environment variables or serve flags
# (README "Configuration"; docs/deploy.md).

FROM golang:1.26 AS build
# The command to build: a package path of the module with a main over its
# worlds.
ARG CMD=./cmd/seahaven
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
# The SQLite engine is WebAssembly run by a pure-Go runtime, so the binary
# needs no cgo and no libc.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=linux go build -trimpath -buildvcs=false -ldflags="-s -w" -o /out/seahaven "$CMD"
# The directories the server writes: instance files (one directory per
# open episode), checkpoints (mount a volume the replicas share there), and
# its temp directory (TMPDIR), where embedded fixtures are copied on start.
# The final image has no shell, so they are made here.
RUN mkdir -p /out/var/instances /out/var/checkpoints /out/var/tmp

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/seahaven /usr/local/bin/seahaven
COPY --from=build --chown=65532:65532 /out/var /var/lib/seahaven
ENV SEAHAVEN_ADDR=:8000 \
    SEAHAVEN_INSTANCES=/var/lib/seahaven/instances \
    SEAHAVEN_CHECKPOINTS=/var/lib/seahaven/checkpoints \
    TMPDIR=/var/lib/seahaven/tmp \
    SEAHAVEN_LOG_FORMAT=json
USER 65532:65532
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD ["/usr/local/bin/seahaven", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/seahaven"]
CMD ["serve"]
