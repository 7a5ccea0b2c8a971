# syntax=docker/dockerfile:1
# One image for every role; the command picks it:
#   docker run IMAGE                      gateway (the default)
#   docker run IMAGE account-api          the account API
#   docker run IMAGE start                gateway and account API in one process
#   docker run IMAGE keys create ...      key management against REDIS_URL
# Node.js 24 on Debian 13 (glibc 2.41): the uWebSockets.js binaries for Node.js 22 and later need
# glibc 2.38 (docs/operations.md, "Runtimes"). Node.js 20, for those who must:
#   docker build --build-arg NODE_IMAGE=node:20-bookworm-slim .
ARG NODE_IMAGE=node:24-trixie-slim

# ---- build: every dependency, then the TypeScript project build --------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /app
# Manifests first, so the dependency layer is cached until one of them changes.
COPY package.json package-lock.json .npmrc ./
COPY packages/core/package.json packages/core/
COPY packages/gateway/package.json packages/gateway/
COPY packages/account-api/package.json packages/account-api/
COPY packages/harness/package.json packages/harness/
COPY packages/testing/package.json packages/testing/
COPY packages/client/package.json packages/client/
COPY packages/cli/package.json packages/cli/
COPY bench/package.json bench/
COPY chaos/package.json chaos/
# --ignore-scripts: the root `prepare` script would build before the sources are copied.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.base.json tsconfig.json ./
COPY packages/ packages/
RUN npx tsc -b && node packages/account-api/scripts/build-console.mjs

# ---- runtime: production dependencies and compiled output only ---------------------------------
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    SWITCHBOARD_DATA_DIR=/data
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
COPY packages/core/package.json packages/core/
COPY packages/gateway/package.json packages/gateway/
COPY packages/account-api/package.json packages/account-api/
COPY packages/harness/package.json packages/harness/
COPY packages/testing/package.json packages/testing/
COPY packages/client/package.json packages/client/
COPY packages/cli/package.json packages/cli/
COPY bench/package.json bench/
COPY chaos/package.json chaos/
# Workspace packages are linked into node_modules/@switchboard/*; only their dist/ is copied below.
# The uWebSockets.js builds ship binaries for every platform and Node ABI (~230 MB together): keep only
# this image's ABI; the check after the copies below fails the build when none of them loads.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
    && npm cache clean --force \
    && find node_modules/@trufflesuite/uws-js-unofficial node_modules/@btc-vision/uwebsockets.js \
        -name 'uws_*.node' ! -name "uws_linux_$(node -p process.arch)_$(node -p process.versions.modules).node" \
        -delete \
    && mkdir -p /data && chown node:node /data
COPY --from=build /app/packages/core/dist packages/core/dist
COPY --from=build /app/packages/gateway/dist packages/gateway/dist
COPY --from=build /app/packages/account-api/dist packages/account-api/dist
COPY --from=build /app/packages/cli/dist packages/cli/dist
COPY deploy/docker-healthcheck.js deploy/docker-healthcheck.js
# The start-up check of the gateway, at build time: a base image whose Node.js and glibc have no
# native uWebSockets.js build fails here with the start-up failure's line.
RUN node -e "console.log('uWebSockets.js from', require('./packages/gateway/dist/transport/uws-loader.js').loadUws().from)"

# The application files stay owned by root and read-only for the process.
USER node
# 4001 gateway (WebSockets + cluster API), 4002 account API, 9464 metrics when METRICS_PORT=9464.
EXPOSE 4001 4002 9464
# Checks /api/health of the role the container runs (gateway: PORT, account-api: ACCOUNT_PORT).
HEALTHCHECK --interval=10s --timeout=3s --start-period=15s --retries=3 \
    CMD ["node", "deploy/docker-healthcheck.js"]
ENTRYPOINT ["node", "--max-semi-space-size=8", "packages/cli/dist/main.js"]
CMD ["gateway"]
