# Firkin node image: one node, HTTP on 8080, gRPC on 9080, data in /data, and the `firkin` CLI.
FROM node:20-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY proto ./proto
COPY console ./console
COPY scripts/build-console.mjs ./scripts/
RUN npm run build && npm prune --omit=dev

FROM node:20-slim
WORKDIR /app
ENV NODE_ENV=production \
    SERVICE_HTTP_IP=0.0.0.0 \
    SERVICE_HTTP_PORT=8080 \
    SERVICE_DATA_DIR=/data
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/proto ./proto
COPY package.json ./
COPY bin ./bin
# The admin CLI: `docker exec <container> firkin cluster status`.
RUN ln -s /app/bin/firkin.js /usr/local/bin/firkin
# The data directory exists in the image, owned by the user the node runs as: a new named
# volume takes the image's directory (and its owner) there; without it the volume's root
# would be root's, and the node could not write its data (it stops saying so).
RUN mkdir -p /data && chown node:node /data
VOLUME ["/data"]
EXPOSE 8080 9080
USER node
# V8 flags: src/core/node-flags.ts says why.
CMD ["node", "--max-semi-space-size=32", "dist/src/main.js"]
