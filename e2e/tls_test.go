package e2e_test

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testCA is a certificate authority made for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "rota test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue writes a certificate for 127.0.0.1 with this serial, and its key.
func (ca *testCA) issue(t *testing.T, serial int64, certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestTLS: rota serve --tls-cert/--tls-key serves HTTPS, TLS 1.2 and up;
// the CLI trusts a private authority with --ca and says what to do
// without it; SIGHUP loads a renewed certificate.
func TestTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := newCA(t)
	caFile, certFile, keyFile := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(caFile, ca.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	ca.issue(t, 100, certFile, keyFile)

	cmd := exec.Command(bin, "serve", "--http", "127.0.0.1:0", "--data", filepath.Join(dir, "data"),
		"--tls-cert", certFile, "--tls-key", keyFile)
	cmd.Env = cleanEnv()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(t, cmd, syscall.SIGTERM) })
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var url string
	for url == "" {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatal("rota serve exited")
			}
			if m := servingRE.FindStringSubmatch(line); m != nil {
				url = m[1]
			}
		case <-time.After(commandTimeout):
			t.Fatal("rota serve did not start")
		}
	}
	go func() { // keep reading, so that the server never blocks on its log
		for range lines {
		}
	}()
	if !strings.HasPrefix(url, "https://") {
		t.Fatalf("served at %s, want https://", url)
	}
	s := &server{URL: url}
	if r := s.run(t, "", "--ca", caFile, "add", "tls.t"); r.code != 0 || !strings.Contains(r.stdout, "inserted") {
		t.Errorf("add over TLS with --ca: %v", r)
	}
	if r := s.run(t, "", "ls"); r.code != 5 || !strings.Contains(r.stderr, "--ca") {
		t.Errorf("ls over TLS without --ca: %v, want exit 5 and advice to pass --ca", r)
	}
	host := strings.TrimPrefix(url, "https://")
	serial := func() int64 {
		pool := x509.NewCertPool()
		pool.AddCert(ca.cert)
		conn, err := tls.Dial("tcp", host, &tls.Config{RootCAs: pool})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
	}
	if got := serial(); got != 100 {
		t.Fatalf("serves certificate %d, want 100", got)
	}
	if _, err := tls.Dial("tcp", host, &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS11}); err == nil {
		t.Error("a TLS 1.1 handshake succeeded")
	}
	// Renewed: the files change, SIGHUP, and new connections get the new one.
	ca.issue(t, 200, certFile, keyFile)
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the renewed certificate is served", func() bool { return serial() == 200 })
}
