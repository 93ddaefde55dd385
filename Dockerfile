# The platform operator as a container, non-root (65532) on a distroless base: no shell, no package
# manager. Two forms of the same program, src/cli/operator_main.ts with the operator's own module
# graph (deploy/operator/deno.json and its lockfile: no test library, no unused package):
#   binary        (the default) the single binary `deno task compile` makes; needs Deno's denort
#                 download (dl.deno.land) at build time:
#                   docker build --platform linux/amd64 -t REGISTRY/platform-operator:TAG .
#   deno-runtime  the pinned deno with the graph cached at build time, run with --cached-only and
#                 the compile task's permissions; what `./deno task image` builds where denort
#                 cannot be downloaded, on base images it makes itself (see docs/operations.md).
# The base images are build arguments, so the same file builds on local stand-ins.
ARG DENO_IMAGE=denoland/deno:2.9.6
ARG RUNTIME_IMAGE=gcr.io/distroless/cc-debian12:nonroot

# --- build: the operator's npm packages, exactly as locked (fails if the lockfile would change) ---
FROM ${DENO_IMAGE} AS build
# A CA bundle for a TLS-intercepting proxy between the build and npm, if there is one.
ARG DENO_CERT
WORKDIR /app
COPY deno.json deno.lock ./
COPY deploy/operator/ deploy/operator/
COPY src/ src/
# The modules' upstream CRDs, kept as data: the operator imports them (as text) on a module's preload.
COPY data/upstream/ data/upstream/
# Exec form: the build stage needs no shell.
RUN ["deno", "install", "--config", "deploy/operator/deno.json", "--frozen", "--entrypoint", "src/cli/operator_main.ts"]
# Only the operator's module graph stays in src/ and data/ (not the CLI's generators or preview).
# No code cache: the operator runs without one, and this run's would be dead weight in the image.
RUN ["deno", "run", "--frozen", "--no-code-cache", "--allow-read=.", "--allow-write=src,data", "--allow-run", "deploy/operator/prune.ts"]
# The caches stay readable on a read-only root (deploy/operator/seal_cache.ts): its own run uses
# another DENO_DIR, so that it opens none of the databases it seals.
ENV DENO_DIR=/tmp/seal-deno-dir/
RUN ["deno", "run", "--no-config", "--allow-read=/deno-dir", "--allow-write=/deno-dir", "deploy/operator/seal_cache.ts", "/deno-dir"]
ENV DENO_DIR=/deno-dir/

# --- compile: `deno task compile` downloads denort 2.9.6 and bakes in the operator's permissions ---
FROM build AS compile
RUN deno task compile && ./dist/platform-operator --help > /dev/null

# --- deno-runtime: the pinned deno runs the cached graph; nothing is fetched or written at run time ---
FROM ${RUNTIME_IMAGE} AS deno-runtime
COPY --from=build /usr/bin/deno /usr/bin/deno
COPY --from=build /deno-dir/ /deno-dir/
COPY --from=build /app/deploy/operator/ /app/deploy/operator/
COPY --from=build /app/src/ /app/src/
COPY --from=build /app/data/upstream/ /app/data/upstream/
ENV DENO_DIR=/deno-dir/
ENV DENO_NO_UPDATE_CHECK=1
ENV DENO_USE_CGROUPS=1
ENV MALLOC_ARENA_MAX=1
USER nonroot
EXPOSE 8080 8081
ENTRYPOINT ["/usr/bin/deno", "run", "--cached-only", "--frozen", "--no-code-cache", "--v8-flags=--max-semi-space-size=1", "--no-prompt", "--config=/app/deploy/operator/deno.json", "--allow-net", "--allow-read=/var/run/secrets/kubernetes.io/serviceaccount,/etc/platform-operator", "--allow-env=PLATFORM_OPERATOR_KUBECONFIG,KUBECONFIG,PLATFORM_OPERATOR_CONTEXT,PLATFORM_OPERATOR_ALLOW_INSECURE_HTTP,PLATFORM_OPERATOR_LEADER_ELECT,PLATFORM_OPERATOR_LEASE_NAMESPACE,PLATFORM_OPERATOR_LEASE_NAME,PLATFORM_OPERATOR_IDENTITY,POD_NAME,PLATFORM_OPERATOR_METRICS_ADDR,PLATFORM_OPERATOR_PROBE_ADDR,PLATFORM_OPERATOR_LOG_LEVEL,PLATFORM_OPERATOR_LOG_FORMAT,PLATFORM_OPERATOR_CONTROLLERS,PLATFORM_OPERATOR_CONCURRENCY,PLATFORM_OPERATOR_MESH_ROOT_NAMESPACE,PLATFORM_OPERATOR_ISTIOD_URL,PLATFORM_OPERATOR_ISTIOD_SERVICE,PLATFORM_OPERATOR_ISTIOD_TOKEN_FILE,PLATFORM_OPERATOR_CLUSTER_DNS,PLATFORM_OPERATOR_GLOBAL_REDIS_SECRET,PLATFORM_OPERATOR_GLOBAL_ENGINE_IMAGE,PLATFORM_OPERATOR_GLOBAL_ENGINE_XDS_PORT,PLATFORM_OPERATOR_GLOBAL_ENGINE_XDS_URL,PLATFORM_OPERATOR_GLOBAL_ENGINE_XDS_TLS_CERT_FILE,PLATFORM_OPERATOR_GLOBAL_ENGINE_XDS_TLS_KEY_FILE,PLATFORM_OPERATOR_GLOBAL_ENGINE_XDS_CLIENT_CA_FILE,PLATFORM_OPERATOR_GLOBAL_ENGINE_XDS_TLS_SECRET,PLATFORM_OPERATOR_GLOBAL_ENGINE_XDS_TLS_SERVER_NAME,PLATFORM_OPERATOR_GLOBAL_ENGINE_REPLICAS,PLATFORM_OPERATOR_GLOBAL_ENGINE_REQUESTS,PLATFORM_OPERATOR_GLOBAL_ENGINE_LIMITS,PLATFORM_OPERATOR_SERVERLESS_IMAGE,IMAGE_SERVERLESS_CONTROLLER,PLATFORM_OPERATOR_KEDA_OPERATOR_IMAGE,IMAGE_KEDA_OPERATOR,PLATFORM_OPERATOR_KEDA_METRICS_SERVER_IMAGE,IMAGE_KEDA_METRICS_APISERVER,PLATFORM_OPERATOR_KEDA_WEBHOOK_IMAGE,IMAGE_KEDA_ADMISSION_WEBHOOKS,KUBERNETES_SERVICE_HOST,KUBERNETES_SERVICE_PORT,HOME,DENO_TLS_CA_STORE,DENO_CERT,NODE_EXTRA_CA_CERTS", "--ignore-env", "--allow-sys=hostname", "/app/src/cli/operator_main.ts", "run"]

# --- binary (default): the compiled operator alone ---
FROM ${RUNTIME_IMAGE} AS binary
COPY --from=compile /app/dist/platform-operator /platform-operator
# Let V8 size its heap from the container's memory limit.
ENV DENO_USE_CGROUPS=1
# One glibc malloc arena: the native side (HTTP bodies, TLS) then returns what a large initial list
# freed instead of keeping it in per-thread arenas (about 10 MB of RSS at 10,000 RateLimits).
ENV MALLOC_ARENA_MAX=1
# No update check (a compiled binary has none; the same environment as deno task start and the tests).
ENV DENO_NO_UPDATE_CHECK=1
USER nonroot
EXPOSE 8080 8081
ENTRYPOINT ["/platform-operator", "run"]
