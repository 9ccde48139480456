# Herald's container image: a static binary on an empty base, run as a
# user that is not root, its data in the /data volume.
#
#   docker build -t herald .
#   docker run -p 4437:4437 -v herald-data:/data -e HERALD_ADMIN_KEY=... herald
#
# BUILDER_IMAGE is any image with Go (of go.mod's version or later) and a
# POSIX shell; scripts/image.sh builds one from the Go toolchain on the
# machine when no registry can be reached.
ARG BUILDER_IMAGE=golang:1.26-bookworm

FROM ${BUILDER_IMAGE} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=devel
ARG COMMIT=unknown
ARG BUILD_TIME=unknown
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT} -X main.buildTime=${BUILD_TIME}" \
      -o /out/herald ./cmd/herald \
 && mkdir -p /out/data /out/etc/ssl/certs \
 && echo 'herald:x:65532:65532:herald:/data:/herald' > /out/etc/passwd \
 && echo 'herald:x:65532:' > /out/etc/group \
 && cp /etc/ssl/certs/ca-certificates.crt /out/etc/ssl/certs/

FROM scratch
COPY --from=build /out/etc /etc
COPY --from=build /out/herald /herald
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
# The same environment configures herald serve and herald healthcheck.
ENV HERALD_ADDR=0.0.0.0:4437 \
    HERALD_DATA_DIR=/data
VOLUME /data
EXPOSE 4437
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 CMD ["/herald", "healthcheck"]
ENTRYPOINT ["/herald"]
CMD ["serve"]
