# The arena dedicated server: UDP and HTTP (WebSocket, WebRTC signalling, /healthz) on one port.
# Node 20 slim, no browser. A build stage compiles the engine (npm run build: dist/) and bundles
# the game's server and its match module (esbuild, packages left external: the engine is reached
# as `backstep/...` through package.json, so worker threads find dist/node/match-worker.js); the
# image that runs holds the JavaScript and the runtime packages only.

FROM node:20-slim AS build
WORKDIR /srv/backstep
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY games ./games
RUN npm run build \
  && npx esbuild games/arena/server/main.ts games/arena/server/match.ts \
    --bundle --packages=external --platform=node --format=esm --target=node20 --outdir=build/arena

FROM node:20-slim
WORKDIR /srv/backstep
ENV NODE_ENV=production
COPY package.json package-lock.json ./
# Runtime packages from the lock file, and Agones' SDK (an optional peer: the server loads it
# only with --agones or BACKSTEP_AGONES=1, as the Agones manifests set).
RUN npm ci --omit=dev --no-audit --no-fund \
  && npm install --no-save --no-audit --no-fund @google-cloud/agones-sdk@1.61.0 \
  && npm cache clean --force
COPY --from=build /srv/backstep/dist ./dist
COPY --from=build /srv/backstep/build ./build
COPY profiles ./profiles

USER node
EXPOSE 7777/udp 7777/tcp

HEALTHCHECK --interval=5s --timeout=2s --start-period=10s --retries=3 \
  CMD node -e "require('http').get('http://127.0.0.1:7777/healthz', r => process.exit(r.statusCode === 200 ? 0 : 1)).on('error', () => process.exit(1))"

CMD ["node", "--single-threaded-gc", "build/arena/main.js", "--host", "0.0.0.0", "--port", "7777"]
