// TLS for mode "produce": metaquorum's controller listener with
// listener.security.protocol.map=CONTROLLER:SSL (and ssl.client.auth=required).
//
// Role: crypto/tls as a Kafka client configured with security.protocol=SSL would be: the CA to
// trust (-tls-ca, ssl.truststore.location), a client certificate for mutual TLS (-tls-cert and
// -tls-key, which may name the same PEM file holding key and chain: Kafka's PEM keystore
// layout), and the server's host name or IP verified against its certificate
// (ssl.endpoint.identification.algorithm=https, Kafka's default). Without -tls-ca, plaintext.
// The handshake completes in dial, so a refused certificate is a connect error, not a write
// error later.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"time"
)

var tlsConfig *tls.Config // nil: plaintext

func loadTLS(caPath, certPath, keyPath string) (*tls.Config, error) {
	pem, err := os.ReadFile(caPath)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("-tls-ca holds no PEM certificate")
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if certPath != "" {
		if keyPath == "" {
			keyPath = certPath
		}
		pair, err := tls.LoadX509KeyPair(certPath, keyPath)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// dial connects to endpoint (host:port) with TCP_NODELAY, over TLS when tlsConfig is set.
func dial(endpoint string) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", endpoint, 5*time.Second)
	if err != nil {
		return nil, err
	}
	c.(*net.TCPConn).SetNoDelay(true)
	if tlsConfig == nil {
		return c, nil
	}
	host, _, err := net.SplitHostPort(endpoint)
	if err != nil {
		c.Close()
		return nil, err
	}
	cfg := tlsConfig.Clone()
	cfg.ServerName = host // an IP is checked against the certificate's IP SANs
	t := tls.Client(c, cfg)
	_ = t.SetDeadline(time.Now().Add(5 * time.Second))
	if err := t.Handshake(); err != nil {
		c.Close()
		return nil, err
	}
	_ = t.SetDeadline(time.Time{})
	return t, nil
}
