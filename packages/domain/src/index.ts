export * from './identifiers.js';
export * from './limits.js';
export * from './channels-csv.js';
export * from './regimes.js';
