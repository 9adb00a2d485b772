// Package broker is LiSa-Go's network-facing side: the OpenAI-compatible
// HTTP API, its validation, authentication and limits. It never parses the
// model; it hands validated requests to a Backend (the sandboxed worker,
// through package supervisor).
package broker
