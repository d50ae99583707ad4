# One image for the deployables; the command picks the app (docker-compose.yml runs the API
# replicas and the workers from it). Build from the repository root:
#   docker build -t anomaly-platform .
FROM node:20-bookworm-slim
WORKDIR /srv
ENV NODE_ENV=production
COPY package.json package-lock.json .npmrc ./
COPY apps/api/package.json apps/api/
COPY apps/cli/package.json apps/cli/
COPY apps/dashboard/package.json apps/dashboard/
COPY apps/worker/package.json apps/worker/
COPY packages/alerts/package.json packages/alerts/
COPY packages/api-types/package.json packages/api-types/
COPY packages/domain/package.json packages/domain/
COPY packages/web-bundle/package.json packages/web-bundle/
COPY packages/model/package.json packages/model/
COPY packages/observability/package.json packages/observability/
COPY packages/platform/package.json packages/platform/
COPY packages/store/package.json packages/store/
COPY packages/stream-worker/package.json packages/stream-worker/
COPY packages/streaming/package.json packages/streaming/
COPY pipelines/detection/package.json pipelines/detection/
COPY pipelines/machine/package.json pipelines/machine/
COPY pipelines/regimes/package.json pipelines/regimes/
# `npm install` from the lock; no install scripts (.npmrc): onnxruntime-node's CPU binary ships in
# the package.
RUN npm install --ignore-scripts && npm cache clean --force
COPY . .
# HOST: every interface, so the published port reaches the server (the app's default is loopback).
ENV PORT=8080 HOST=0.0.0.0 DATA_DIR=/data
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1)).catch(()=>process.exit(1))"
# tsx registered in-process (no npx/tsx wrapper processes, so SIGTERM reaches the server), then
# OpenTelemetry (a no-op unless OTEL_* variables are set, see apps/api/src/instrumentation.ts),
# then the API.
CMD ["node", "--import", "tsx", "--import", "./apps/api/src/instrumentation.ts", "apps/api/src/server.ts"]
