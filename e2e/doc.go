// Package e2e holds end-to-end tests: they build the askpoint command, run
// `askpoint serve` as a separate process on 127.0.0.1 with a SQLite file in
// the test's temporary directory, and drive it over real HTTP.
//
// TestJavaScriptSDK drives the expense agent with the official JavaScript
// SDK (@a2a-js/sdk, pinned in js/package.json and js/package-lock.json)
// over JSON-RPC and HTTP+JSON, blocking and streaming. It needs node (v20
// or later) and npm on PATH; it installs js/node_modules with `npm ci` when
// they are missing. Without node or npm it skips, except when the CI
// environment variable is set, where it fails instead.
package e2e
