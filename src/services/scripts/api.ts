/** What other domains may use of the scripts domain (the dependency check refuses any other way in). */
export { type ScriptExecutionEventData } from './events.js';
export { executeScript, type ExecuteResult } from './script-executions.js';
export { accessibleScript, secretParameterNames } from './scripts.js';
