# The wirebench image: one static binary on an empty base, run as a non-root user, no shell.
#   docker build -t REGISTRY/wirebench:TAG --build-arg VERSION=TAG .    (or podman / buildah)
# `wirebench k8s --image REGISTRY/wirebench:TAG` writes manifests for it (docs/kubernetes.md).
# cmd/wirebench/image_e2e_test.go builds the final stage below around a locally built binary
# with podman (no registry) and runs `wirebench version` and a short `wirebench run` in it.

FROM docker.io/library/golang:1.26-bookworm AS build
ARG VERSION=dev
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# CGO_ENABLED=0: a static binary that needs no libc (the only cgo in wirebench's graph is the
# standard library's optional DNS and user lookups, which have pure-Go versions).
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/wirebench ./cmd/wirebench

FROM scratch
# CA certificates for https targets; nothing else: no shell, no package manager.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/wirebench /usr/local/bin/wirebench
ENV PATH=/usr/local/bin
# 65532: the "nonroot" user of distroless images; `wirebench k8s` runs every pod as this user
# (runAsNonRoot needs a numeric USER to verify it without an /etc/passwd).
USER 65532:65532
ENTRYPOINT ["wirebench"]
CMD ["--help"]
