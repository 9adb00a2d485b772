package config

import (
	"fmt"
	"net"
)

// Warning is one setting that weakens the server, to be logged loudly at
// start.
type Warning struct {
	Key     string // the configuration key responsible
	Message string // one line, starting with an upper-case label
}

// Warnings lists the settings of the resolved configuration c that weaken
// the server without stopping it: no sandbox, seccomp in log mode, no
// memory limit, and API keys crossing the network in clear (plain HTTP off
// loopback, unless behind_tls_proxy says a TLS proxy is in front).
func (c *Config) Warnings() []Warning {
	var ws []Warning
	if !c.SandboxEnabled {
		ws = append(ws, Warning{"sandbox_enabled", "SANDBOX DISABLED: the worker runs unsandboxed (sandbox_enabled: false); a malicious model file can take over this process's user"})
	}
	if c.SandboxEnabled && c.SandboxSeccompLog {
		ws = append(ws, Warning{"sandbox_seccomp_log", "SECCOMP LOG MODE: system calls outside the worker's lists are logged, not refused (sandbox_seccomp_log: true); a malicious model file meets no seccomp filter: use it only to diagnose"})
	}
	if c.MemoryLimitBytes == 0 {
		ws = append(ws, Warning{"memory_limit_bytes", "NO MEMORY LIMIT: memory_limit_bytes is 0, so the worker may take all of this machine's memory (a malicious model file or request can exhaust it)"})
	}
	if host, _, err := net.SplitHostPort(c.Listen); err == nil && !IsLoopback(host) && !c.TLS() && len(c.Keys) > 0 && !c.BehindTLSProxy {
		ws = append(ws, Warning{"behind_tls_proxy", fmt.Sprintf("API KEYS IN CLEAR: %s is off loopback and serves plain HTTP, so API keys and prompts cross the network unencrypted; set tls_cert_file and tls_key_file, or behind_tls_proxy: true if a TLS proxy terminates in front", c.Listen)})
	}
	return ws
}
