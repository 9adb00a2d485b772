package broker

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/lisa-llm/lisa/config"
)

// hstsValue is sent in Strict-Transport-Security when TLS is on.
const hstsValue = "max-age=63072000; includeSubDomains"

// cipherSuites are the TLS 1.2 suites allowed: ECDHE key exchange (forward
// secrecy) with an AEAD only. TLS 1.3 suites are all AEAD and not
// configurable.
func cipherSuites() []uint16 {
	return []uint16{
		tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
		tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
	}
}

// TLSConfig builds the server's TLS configuration from c, or returns nil
// when TLS is off. Only HTTP/1.1 is offered over ALPN.
func TLSConfig(c *config.Config) (*tls.Config, error) {
	if !c.TLS() {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(c.TLSCertFile, c.TLSKeyFile)
	if err != nil {
		return nil, fmt.Errorf("tls_cert_file, tls_key_file: %w", err)
	}
	tc := &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
		CipherSuites: cipherSuites(),
		NextProtos:   []string{"http/1.1"},
	}
	if c.TLSMinVersion == "1.3" {
		tc.MinVersion = tls.VersionTLS13
	}
	if c.TLSClientCAFile != "" {
		pem, err := os.ReadFile(c.TLSClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("tls_client_ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls_client_ca_file: no PEM certificate in %s", c.TLSClientCAFile)
		}
		tc.ClientCAs = pool
		tc.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return tc, nil
}
