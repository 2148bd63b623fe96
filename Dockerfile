# Build a static binary, ship it alone. Runs as root (GitHub requires it for
# container actions) and sets no WORKDIR: GitHub mounts the workspace and
# sets the working directory itself.
FROM golang:1.26 AS build
ENV CGO_ENABLED=0
COPY go.mod go.sum /src/
RUN cd /src && go mod download
COPY . /src
RUN cd /src && go build -trimpath -ldflags="-s -w" -o /aiperf-action ./cmd/aiperf-action

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /aiperf-action /aiperf-action
ENTRYPOINT ["/aiperf-action"]
