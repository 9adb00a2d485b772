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
package config
