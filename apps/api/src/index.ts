// @adp/api's public entry, for what runs the API in process without being part of it (the
// benchmarks in bench/ and the evaluations in eval/): the app, its configuration, the platform it
// opens (store, streaming and the embedded workers), and the packaged learned model.
export { buildApp, type BuildAppOptions } from './app.js';
export { loadConfig, type ApiConfig } from './config.js';
export { openPlatform, type OpenPlatformOptions, type Platform } from './platform.js';
export { loadPackagedModel, type NativeModel, type NativeModelFactory } from './machines/model.js';
