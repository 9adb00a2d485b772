// Package config holds the configuration of lisa serve: the keys of its
// one YAML or JSON file, the command-line flags that override them, their
// defaults and their validation.
//
// # Files and flags
//
// A file is YAML unless its name ends in ".json". Decoding is strict: an
// unknown key, a duplicate key or a value of the wrong type is an error
// naming the key. Every key has a flag of the same name with dashes for
// underscores (ctx_size is --ctx-size); flags given on the command line
// override the file. Durations are strings such as "30s" or "2m".
//
// # API keys
//
// The configuration only ever holds SHA-256 digests of API keys, written
// "sha256:<64 hex digits>", never the keys themselves. Because of that the
// rule that a key has at least MinKeyLength characters and is not a known
// placeholder can only be enforced where the plain key is seen: by HashKey
// (lisa hash-key), which refuses to hash such keys. What Validate can still
// check is that no configured digest is the digest of a known placeholder,
// and that a server listening off loopback has at least one key.
//
// # Weakenings
//
// Some settings weaken the server without stopping it; Warnings lists
// them and lisa serve logs each loudly at start: sandbox_enabled false,
// sandbox_seccomp_log true, memory_limit_bytes 0, and plain HTTP off
// loopback with API keys (the keys cross the network in clear) unless
// behind_tls_proxy says a TLS-terminating proxy is in front.
//
// # Per-address limits
//
// max_connections_per_address, max_handshakes_per_address and
// auth_failure_rpm apply per client address (an IPv4 address, an IPv6 /64).
// Behind a reverse proxy every client has the proxy's address: raise the
// caps or set them to 0 and let the proxy limit its clients.
package config
