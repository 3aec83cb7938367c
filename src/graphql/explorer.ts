import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Request, RequestHandler } from 'express';

const require = createRequire(import.meta.url);
/** A file of an installed package (read by path: React's exports list no UMD build). */
const packageFile = (name: string, file: string) => path.join(path.dirname(require.resolve(`${name}/package.json`)), file);

/** Starts GraphiQL on the page's own endpoint; a file of its own, as helmet's CSP (src/http/app.ts) runs no inline script. */
const START = `(function () {
  var url = location.origin + location.pathname.replace(/\\/$/, '');
  var fetcher = GraphiQL.createFetcher({ url: url });
  ReactDOM.createRoot(document.getElementById('graphiql')).render(
    React.createElement(GraphiQL, { fetcher: fetcher, defaultEditorToolsVisibility: true, isHeadersEditorEnabled: true, shouldPersistHeaders: false }),
  );
})();
`;

/** What the explorer page loads, each from this server under /graphql/explorer/. */
const ASSETS: Record<string, { type: string; file?: string; text?: string }> = {
  'react.production.min.js': { type: 'text/javascript', file: packageFile('react', 'umd/react.production.min.js') },
  'react-dom.production.min.js': { type: 'text/javascript', file: packageFile('react-dom', 'umd/react-dom.production.min.js') },
  'graphiql.min.js': { type: 'text/javascript', file: packageFile('graphiql', 'graphiql.min.js') },
  'graphiql.min.css': { type: 'text/css', file: packageFile('graphiql', 'graphiql.min.css') },
  'start.js': { type: 'text/javascript', text: START },
};

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>rmm-service GraphQL explorer</title>
<link rel="stylesheet" href="/graphql/explorer/graphiql.min.css">
<style>html, body, #graphiql { height: 100%; margin: 0; }</style>
</head>
<body>
<div id="graphiql">Loading the explorer…</div>
<script src="/graphql/explorer/react.production.min.js"></script>
<script src="/graphql/explorer/react-dom.production.min.js"></script>
<script src="/graphql/explorer/graphiql.min.js"></script>
<script src="/graphql/explorer/start.js"></script>
</body>
</html>
`;

const wantsPage = (req: Request) => req.method === 'GET' && req.path === '/' && Object.keys(req.query as object).length === 0 && req.accepts(['application/json', 'text/html']) === 'text/html';

/**
 * The GraphQL explorer (GraphiQL), with GRAPHQL_EXPLORER=true: `GET /graphql` asked for HTML, with React's and
 * GraphiQL's browser builds served from their npm packages under /graphql/explorer/ (nothing from
 * another origin, as helmet's CSP requires; GraphiQL's editors set inline styles, which it allows).
 * Answers only those requests; the rest go on (`next`).
 */
export function explorer(): RequestHandler {
  const loaded = new Map<string, Buffer>();
  return (req, res, next) => {
    if (wantsPage(req)) {
      return void res.status(200).type('text/html; charset=utf-8').setHeader('cache-control', 'no-store').send(PAGE);
    }
    const name = req.method === 'GET' && req.path.startsWith('/explorer/') ? req.path.slice('/explorer/'.length) : null;
    const asset = name !== null && Object.hasOwn(ASSETS, name) ? ASSETS[name]! : null;
    if (!asset) return next();
    let body = loaded.get(name!);
    if (!body) {
      body = asset.file ? fs.readFileSync(asset.file) : Buffer.from(asset.text!);
      loaded.set(name!, body);
    }
    res.status(200).type(`${asset.type}; charset=utf-8`).setHeader('cache-control', 'public, max-age=3600').send(body);
  };
}
