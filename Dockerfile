# The arena dedicated server: UDP and HTTP (WebSocket, WebRTC signalling, /healthz) on one port.
# Node 20 slim, no browser; the engine and the game run from their sources through tsx.
FROM node:20-slim

WORKDIR /srv/backstep

COPY package.json package-lock.json ./
# From the lock file only, development packages included: the server runs its TypeScript
# through tsx. (No browser is downloaded: playwright-core drives a system Chromium only.)
RUN npm ci --no-audit --no-fund && npm cache clean --force
ENV NODE_ENV=production

COPY src ./src
COPY games ./games
COPY profiles ./profiles
COPY tsconfig.json ./

USER node
EXPOSE 7777/udp 7777/tcp

HEALTHCHECK --interval=5s --timeout=2s --start-period=10s --retries=3 \
  CMD node -e "require('http').get('http://127.0.0.1:7777/healthz', r => process.exit(r.statusCode === 200 ? 0 : 1)).on('error', () => process.exit(1))"

CMD ["node", "--conditions=backstep-source", "--import", "tsx", "games/arena/server/main.ts", "--host", "0.0.0.0", "--port", "7777"]
