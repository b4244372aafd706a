# The crawler image: the `crawl` CLI (every processor, `crawl serve`, `crawl init`/`seed`).
# Built and used by docker-compose.yml; the command picks the role, e.g. `process fetch`.
#
#   docker build -t kcrawl .
#   docker run --rm kcrawl --help

FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` would compile before the sources are copied.
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.json ./
COPY api ./api
COPY cli ./cli
COPY connectors ./connectors
COPY lib ./lib
COPY processors ./processors
COPY runtime ./runtime
COPY topologies ./topologies
COPY schemas ./schemas
RUN npx tsc -p tsconfig.json && npm prune --omit=dev --ignore-scripts

FROM node:20-bookworm-slim
# jemalloc: bin/crawl.js preloads it where installed (glibc keeps what LevelDB frees; docs/frontier-store.md).
# libdeflate: the WARC records' gzip members (lib/warc/libdeflate.ts; node:zlib without it).
RUN apt-get update && apt-get install -y --no-install-recommends libjemalloc2 libdeflate0 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY bin ./bin
COPY schemas ./schemas
# No root inside: the crawler only needs the network and its temp dir.
USER node
# The young-generation size bin/crawl.js gives node when run as a program, for every `node` here.
ENV NODE_OPTIONS=--max-semi-space-size=32
# Run as a program: its sh launcher line also sizes V8's helper threads to the container's cores.
ENTRYPOINT ["/app/bin/crawl.js"]
CMD ["--help"]
