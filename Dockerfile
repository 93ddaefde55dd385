# The platform operator as a container: a single binary compiled by `deno task compile`, run as
# non-root on distroless. Build (linux/amd64; the binary targets x86_64-unknown-linux-gnu):
#   docker build --platform linux/amd64 -t REGISTRY/platform-operator:TAG .

# --- build: compile with the project's pinned Deno and its frozen lockfile ---
FROM denoland/deno:2.9.6 AS build
WORKDIR /app
COPY deno.json deno.lock ./
COPY mod.ts ./
COPY src/ src/
# Fetch the npm dependencies exactly as locked (fails if deno.lock would change).
RUN deno install --frozen --entrypoint src/cli/operator_main.ts
# `deno task compile` downloads denort 2.9.6 and bakes in the operator's permissions.
RUN deno task compile && ./dist/platform-operator --help > /dev/null

# --- runtime: glibc and CA certificates only, no shell, user 65532 ---
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /app/dist/platform-operator /platform-operator
# Let V8 size its heap from the container's memory limit.
ENV DENO_USE_CGROUPS=1
# One glibc malloc arena: the native side (HTTP bodies, TLS) then returns what a large initial list
# freed instead of keeping it in per-thread arenas (about 10 MB of RSS at 10,000 RateLimits).
ENV MALLOC_ARENA_MAX=1
USER nonroot
EXPOSE 8080 8081
ENTRYPOINT ["/platform-operator", "run"]
