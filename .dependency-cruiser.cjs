/**
 * The layering, checked by `npm run depcheck` (CI runs it next to the type check):
 *
 *   wiring (src/server.ts, src/main.ts, src/scripts/, src/http/app.ts, src/graphql/schema.ts and print.ts, the domain list
 *   src/domains.ts and the domains' manifests src/services/<domain>/index.ts)
 *   → entry points: adapters (rest/, resolvers/ with their plumbing in src/http, src/graphql), jobs (src/jobs), event subscribers (src/subscribers)
 *   → src/services (one folder per domain; another domain only through its api.ts; src/services/shared for all)
 *   → src/auth, src/db (with mikro-orm.config.ts and src/migrations), src/events
 *   → shared helpers (errors, validation, pagination, config, logger, …) and entities/
 *
 * Each arrow points down only. Type-only imports count too (they are dependencies of the design),
 * except where a rule says otherwise.
 */
const ADAPTERS = '^(rest|resolvers)/';
const ENTRY_POINTS = '^(rest|resolvers|src/jobs|src/subscribers)/';
const PLUMBING = '^src/(graphql|http)/';
const MANIFESTS = '^src/services/[^/]+/index\\.ts$';
const WIRING = `^src/(server|main|domains|domain-module)\\.ts$|^src/scripts/|^src/http/app\\.ts$|^src/graphql/(schema|print)\\.ts$|${MANIFESTS}`;
const BELOW_SERVICES = '^src/(auth|db|events|migrations)/|^src/runtime\\.ts$|^mikro-orm\\.config\\.ts$';
const HELPERS = '^src/(errors|validation|pagination|canonical-json|config|logger|memo|paths|secrets)\\.ts$|^src/net/';

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No module reaches itself again through its imports, type-only ones included.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'simulator-stands-alone',
      comment: 'The agent simulator runs against any deployment, so it speaks the public protocol only: Node built-ins, ws and graphql-ws, no server code.',
      severity: 'error',
      from: { path: '^src/scripts/simulat(e|or)\\.ts$' },
      to: { pathNot: ['^src/scripts/simulator\\.ts$', '^node_modules/(ws|graphql-ws)/'], dependencyTypesNot: ['core'] },
    },
    {
      name: 'adapters-use-services',
      comment:
        'REST handlers and resolvers parse, call a service and shape the answer. They import services, auth, the shared helpers, ' +
        'their plumbing (GraphQL context and contract, OpenAPI, rate limit), event payload types and their own folder: no queries, no role logic.',
      severity: 'error',
      from: { path: ADAPTERS },
      to: {
        path: '^(src|entities|rest|resolvers)/',
        pathNot: [
          '^$1/',
          '^src/(services|auth)/',
          '^src/(pagination|validation|errors)\\.ts$',
          '^src/graphql/(context|contract)\\.ts$',
          '^src/http/(openapi|rate-limit)\\.ts$',
          '^src/events/types\\.ts$',
          '^entities/',
        ],
      },
    },
    {
      name: 'adapters-see-entity-types-only',
      comment: 'Adapters may name an entity type (e.g. an enum) but never load entity classes: queries belong in services.',
      severity: 'error',
      from: { path: ADAPTERS },
      to: { path: '^entities/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'services-below-entry-points',
      comment: 'Services are called by adapters, jobs and subscribers and never know them.',
      severity: 'error',
      from: { path: '^src/services/', pathNot: MANIFESTS },
      to: { path: [ENTRY_POINTS, PLUMBING, WIRING] },
    },
    {
      name: 'domains-through-their-api',
      comment:
        'A domain reaches another only through the functions and types that domain publishes in its api.ts, so its other ' +
        'files are its own to change. src/services/shared holds helpers of no domain, open to all.',
      severity: 'error',
      from: { path: '^src/services/([^/]+)/', pathNot: MANIFESTS },
      to: { path: '^src/services/', pathNot: ['^src/services/$1/', '^src/services/shared/', '^src/services/[^/]+/api\\.ts$'] },
    },
    {
      name: 'device-reports-dispatched',
      comment:
        'What agents report reaches other domains through the listeners and command types their manifests register ' +
        '(src/services/devices/device-reports.ts, device-commands.ts): the agent protocol names no other domain.',
      severity: 'error',
      from: { path: '^src/services/devices/(agents|agent-channel|agent-channel-bus|device-reports|device-commands)\\.ts$' },
      to: { path: '^src/services/', pathNot: ['^src/services/devices/', '^src/services/shared/', '^src/services/audit/api\\.ts$'] },
    },
    {
      name: 'shared-serves-every-domain',
      comment: 'Helpers in src/services/shared belong to no domain and import none.',
      severity: 'error',
      from: { path: '^src/services/shared/' },
      to: { path: '^src/services/', pathNot: '^src/services/shared/' },
    },
    {
      name: 'manifests-only-in-the-list',
      comment: 'A manifest is read by src/domains.ts alone: everything else imports the domain’s services or api.ts.',
      severity: 'error',
      from: { pathNot: '^src/domains\\.ts$' },
      to: { path: MANIFESTS },
    },
    {
      name: 'auth-db-events-below-services',
      comment:
        'Access, transactions and the outbox sit under the services. What they need from a service comes in through an ' +
        'interface the service implements and the wiring installs (the policy’s DenialLog, the dispatcher’s EventSubscriber).',
      severity: 'error',
      from: { path: BELOW_SERVICES },
      to: { path: ['^src/services/', ENTRY_POINTS, PLUMBING, WIRING] },
    },
    {
      name: 'entry-points-apart',
      comment: 'Jobs and subscribers drive services; they do not reach into the HTTP/GraphQL adapters or the wiring.',
      severity: 'error',
      from: { path: '^src/(jobs|subscribers)/' },
      to: { path: [ADAPTERS, PLUMBING, WIRING] },
    },
    {
      name: 'plumbing-below-wiring',
      comment: 'Only the wiring assembles the adapters; the plumbing they import never imports them back.',
      severity: 'error',
      from: { path: PLUMBING, pathNot: WIRING },
      to: { path: [ADAPTERS, WIRING] },
    },
    {
      name: 'helpers-are-leaves',
      comment: 'Shared helpers know nothing of the layers that use them.',
      severity: 'error',
      from: { path: HELPERS },
      to: { path: '^(src|rest|resolvers|entities)/', pathNot: HELPERS },
    },
    {
      name: 'entities-stand-alone',
      comment: 'Entities are the bottom layer: they import only other entities and libraries.',
      severity: 'error',
      from: { path: '^entities/' },
      to: { path: '^(src|rest|resolvers)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|node_modules)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
