# LiSa-Go in a scratch image: the static binary and nothing else.
#
#   docker build -t lisa .
#   docker run --rm -p 8080:8080 -v /path/to/models:/models:ro \
#     --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
#     --security-opt systempaths=unconfined \
#     lisa serve -m /models/model.gguf --listen 0.0.0.0:8080 --api-keys-file /models/keys
#
# The worker sandbox creates user, mount, PID, network, IPC, UTS and cgroup
# namespaces and installs its own seccomp filters and Landlock rules. Docker's
# default seccomp profile and AppArmor profile forbid creating namespaces, so
# they must be lifted for the container; the worker's own sandbox is tighter
# than either. No capability is added: the image runs as UID 10001.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o /out/lisa ./cmd/lisa \
 && mkdir -p /out/rootfs/tmp && chmod 1777 /out/rootfs/tmp

FROM scratch
COPY --from=build /out/lisa /lisa
COPY --from=build /out/rootfs/ /
USER 10001:10001
EXPOSE 8080
VOLUME ["/models"]
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s CMD ["/lisa", "health", "--url", "http://127.0.0.1:8080/health"]
ENTRYPOINT ["/lisa"]
CMD ["serve", "-m", "/models/model.gguf", "--listen", "0.0.0.0:8080"]
