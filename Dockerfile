# Build a static binary and ship it on a small base with a shell. Runs as
# root (GitHub requires it for container actions) and sets no WORKDIR:
# GitHub mounts the workspace and sets the working directory itself.
#
# The base is debian's slim image rather than scratch so that a
# server-command can run inside the action's container: a shell script, or a
# server installed into the image. (A GPU model server, vLLM or SGLang, runs
# beside the action instead: a service container at `url`, or the released
# binary in a plain run step; see the README's examples.)
FROM golang:1.26 AS build
ARG VERSION=0.1.0-dev
ENV CGO_ENABLED=0
COPY go.mod go.sum /src/
RUN cd /src && go mod download
COPY . /src
RUN cd /src && go build -trimpath -ldflags="-s -w -X github.com/aiperf-action/aiperf-action/internal/run.Version=${VERSION}" -o /aiperf-action ./cmd/aiperf-action

FROM debian:12-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates && rm -rf /var/lib/apt/lists/*
COPY --from=build /aiperf-action /usr/local/bin/aiperf-action
ENTRYPOINT ["/usr/local/bin/aiperf-action"]
