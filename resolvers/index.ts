import { SystemResolver } from './system.js';

/** Every GraphQL resolver class; a domain adds its resolver here. */
export const resolvers = [SystemResolver] as const;
