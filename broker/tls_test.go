package broker_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/config"
)

// testPKI is a CA with a server and a client certificate, made in the test.
type testPKI struct {
	caPool            *x509.CertPool
	caFile            string
	certFile, keyFile string
	client            tls.Certificate
	otherClient       tls.Certificate // signed by another CA
}

func makeCert(t *testing.T, tmpl *x509.Certificate, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key, der
}

func pemFile(t *testing.T, dir, name, typ string, der []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func newPKI(t *testing.T) *testPKI {
	t.Helper()
	dir := t.TempDir()
	now := time.Now()
	caTmpl := func(n int64, cn string) *x509.Certificate {
		return &x509.Certificate{SerialNumber: big.NewInt(n), Subject: pkix.Name{CommonName: cn}, NotBefore: now.Add(-time.Hour),
			NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	}
	ca, caKey, caDER := makeCert(t, caTmpl(1, "test CA"), nil, nil)
	leaf := func(n int64, usage x509.ExtKeyUsage, parent *x509.Certificate, pk *ecdsa.PrivateKey) ([]byte, *ecdsa.PrivateKey) {
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(n), Subject: pkix.Name{CommonName: "leaf"}, NotBefore: now.Add(-time.Hour),
			NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
		_, key, der := makeCert(t, tmpl, parent, pk)
		return der, key
	}
	srvDER, srvKey := leaf(2, x509.ExtKeyUsageServerAuth, ca, caKey)
	cliDER, cliKey := leaf(3, x509.ExtKeyUsageClientAuth, ca, caKey)
	other, otherKey, _ := makeCert(t, caTmpl(4, "other CA"), nil, nil)
	othDER, othKey := leaf(5, x509.ExtKeyUsageClientAuth, other, otherKey)
	p := &testPKI{caPool: x509.NewCertPool()}
	p.caPool.AddCert(ca)
	p.caFile = pemFile(t, dir, "ca.pem", "CERTIFICATE", caDER)
	p.certFile = pemFile(t, dir, "srv.pem", "CERTIFICATE", srvDER)
	keyDER, _ := x509.MarshalECPrivateKey(srvKey)
	p.keyFile = pemFile(t, dir, "srv.key", "EC PRIVATE KEY", keyDER)
	p.client = tls.Certificate{Certificate: [][]byte{cliDER}, PrivateKey: cliKey}
	p.otherClient = tls.Certificate{Certificate: [][]byte{othDER}, PrivateKey: othKey}
	return p
}

func (p *testPKI) get(url string, tc *tls.Config) (*http.Response, error) {
	tc.RootCAs = p.caPool
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	return c.Get(url)
}

func TestTLS(t *testing.T) {
	p := newPKI(t)
	tests := []struct {
		name   string
		min    string
		mtls   bool
		client *tls.Config
		ok     bool
	}{
		{"tls 1.3", "1.2", false, &tls.Config{}, true},
		{"tls 1.2 aead", "1.2", false, &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}}, true},
		{"tls 1.2 cbc refused", "1.2", false, &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA}}, false},
		{"tls 1.1 refused", "1.2", false, &tls.Config{MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}, false},
		{"1.3 minimum refuses 1.2", "1.3", false, &tls.Config{MaxVersion: tls.VersionTLS12}, false},
		{"1.3 minimum", "1.3", false, &tls.Config{}, true},
		{"mtls without cert", "1.2", true, &tls.Config{}, false},
		{"mtls other CA", "1.2", true, &tls.Config{Certificates: []tls.Certificate{p.otherClient}}, false},
		{"mtls good cert", "1.2", true, &tls.Config{Certificates: []tls.Certificate{p.client}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := start(t, newFake("x"), testConfig(t, func(c *config.Config) {
				c.TLSCertFile, c.TLSKeyFile, c.TLSMinVersion = p.certFile, p.keyFile, tt.min
				if tt.mtls {
					c.TLSClientCAFile = p.caFile
				}
			}))
			resp, err := p.get(ts.URL+"/health", tt.client)
			if !tt.ok {
				if err == nil {
					resp.Body.Close()
					t.Fatal("the connection was accepted")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 || resp.Header.Get("Strict-Transport-Security") == "" || resp.ProtoMajor != 1 {
				t.Fatalf("status %d, HSTS %q, proto %s", resp.StatusCode, resp.Header.Get("Strict-Transport-Security"), resp.Proto)
			}
		})
	}
	ts := start(t, newFake("x"), testConfig(t, nil))
	if code, hdr, _ := ts.do(t, "GET", "/health", "", ""); code != 200 || hdr.Get("Strict-Transport-Security") != "" {
		t.Fatal("HSTS sent without TLS")
	}
}

func TestTLSHandshakeCap(t *testing.T) {
	p := newPKI(t)
	ts := start(t, newFake("x"), testConfig(t, func(c *config.Config) {
		c.TLSCertFile, c.TLSKeyFile = p.certFile, p.keyFile
		c.MaxHandshakes = 2
		c.HandshakeTimeout = config.Duration(400 * time.Millisecond)
	}))
	// Two connections that send the start of a ClientHello and then stall
	// hold both slots (silent ones would be abandoned: TestIdleFlood).
	var stalled []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", ts.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write([]byte{0x16, 0x03, 0x01, 0x02}); err != nil {
			t.Fatal(err)
		}
		stalled = append(stalled, c)
	}
	time.Sleep(100 * time.Millisecond)
	if resp, err := p.get(ts.URL+"/health", &tls.Config{}); err == nil {
		resp.Body.Close()
		t.Fatal("a handshake past the cap succeeded")
	}
	// The stalled handshakes time out and free their slots.
	for _, c := range stalled {
		_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Fatal("a stalled handshake got data")
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatal("a stalled handshake was not closed by the handshake timeout")
		}
	}
	resp, err := p.get(ts.URL+"/health", &tls.Config{})
	if err != nil {
		t.Fatalf("no handshake after the slots freed: %v", err)
	}
	resp.Body.Close()
}
