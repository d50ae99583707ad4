# One image for the deployables; the command picks the app. Build from the repository root:
#   docker build -t anomaly-platform .
FROM node:20-bookworm-slim
WORKDIR /srv
ENV NODE_ENV=production \
    npm_config_onnxruntime_node_install=skip
COPY package.json package-lock.json .npmrc ./
COPY apps/api/package.json apps/api/
COPY apps/cli/package.json apps/cli/
COPY packages/store/package.json packages/store/
COPY pipelines/detection/package.json pipelines/detection/
# tsx runs the TypeScript sources directly, so it stays in the image.
RUN npm ci --include=dev --ignore-scripts && npm cache clean --force
COPY . .
ENV PORT=8080 DATA_DIR=/data
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1)).catch(()=>process.exit(1))"
CMD ["npx", "tsx", "apps/api/src/server.ts"]
