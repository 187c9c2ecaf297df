# verify as a static binary in a `scratch` image, for the Kubernetes Jobs of deploy/
# (docs/kubernetes.md). Build from the checkout's root:
#
#   docker build -t verify:0.1.0 .
#
# Stage 1 builds for the musl target: Alpine's Rust is musl-native, so the binary links
# statically (ring's C and assembly are built by the image's gcc against musl-dev).
FROM rust:1.95-alpine AS build
RUN apk add --no-cache musl-dev ca-certificates
WORKDIR /src
COPY . .
# no default features: the image keeps musl's allocator (jemalloc, the default elsewhere, is a C
# build not tried on musl here, with no container engine; a Pod's live run waits on the
# cluster's API, not on allocation); --locked: Cargo.lock as committed
RUN cargo build --release --locked --no-default-features --bin verify \
    && strip target/release/verify \
    && mkdir -p /out/verify/.verify \
    && cp target/release/verify /out/verify-bin \
    && cp -r .verify/known.yaml .verify/known .verify/regressions.txt /out/verify/.verify/

# Stage 2: nothing but the binary, the CA bundle (TLS to the API server: the in-cluster
# kubeconfig names the service account's own ca.crt, a --kubeconfig may rely on the system's
# roots), and the ledger and regression seeds a run reads from its working directory.
FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/verify-bin /usr/local/bin/verify
# owned by the Pods' user (deploy/: runAsUser 65532), so a new finding's seed can be appended
COPY --from=build --chown=65532:65532 /out/verify /verify
WORKDIR /verify
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/verify"]
CMD ["--help"]
