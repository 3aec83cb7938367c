import type { PolicyRows } from './rows.js';

// The security routes' rows are added with the routes (threats and scans; posture, policies and recommendations).
export const rows: PolicyRows = {};
