package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/petrelmq/petrel/internal/daemon"
	"github.com/petrelmq/petrel/internal/grpcfront"
)

// grpcOptions are the flags of the RocketMQ 5.x gRPC front.
type grpcOptions struct {
	listen    string
	tlsCert   string
	tlsKey    string
	plaintext bool
	// sharedCert: the --tls-cert apply gave the front (for describe).
	sharedCert string
}

func addGRPCFlags(fl *pflag.FlagSet, o *grpcOptions) {
	fl.StringVar(&o.listen, "grpc-listen", ":8081", `address of the RocketMQ 5.x gRPC endpoint (clients' Endpoint); "" or "off" turns it off`)
	fl.StringVar(&o.tlsCert, "grpc-tls-cert", "", "PEM certificate for the gRPC endpoint (default: a self-signed one generated into --data-dir on first start)")
	fl.StringVar(&o.tlsKey, "grpc-tls-key", "", "PEM private key of --grpc-tls-cert")
	fl.BoolVar(&o.plaintext, "grpc-plaintext", false, "serve gRPC without TLS (the official Go client v5 always uses TLS; only for clients that can dial plaintext)")
}

// apply puts the gRPC settings into the daemon's config; the front is off
// when --grpc-listen is "" or "off". It serves the certificate of
// --tls-cert/--tls-key (sec) unless --grpc-tls-cert/--grpc-tls-key or
// --grpc-plaintext are given.
func (o *grpcOptions) apply(cfg *daemon.BrokerConfig, sec *securityOptions) error {
	listen := strings.TrimSpace(o.listen)
	if listen == "" || strings.EqualFold(listen, "off") {
		if o.tlsCert != "" || o.tlsKey != "" || o.plaintext {
			return fmt.Errorf("--grpc-tls-cert, --grpc-tls-key and --grpc-plaintext need the gRPC endpoint, which --grpc-listen %q turns off", o.listen)
		}
		return nil
	}
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return fmt.Errorf("give both --grpc-tls-cert and --grpc-tls-key, or neither for a self-signed certificate")
	}
	if o.plaintext && o.tlsCert != "" {
		return fmt.Errorf("--grpc-plaintext and --grpc-tls-cert exclude each other; choose one")
	}
	cfg.GRPCListen = listen
	cfg.GRPC.TLSCert, cfg.GRPC.TLSKey, cfg.GRPC.Plaintext = o.tlsCert, o.tlsKey, o.plaintext
	if o.tlsCert == "" && !o.plaintext && sec != nil && sec.tlsCert != "" && sec.tlsKey != "" {
		// With the process's tlsx.Server (a TLS mode) the daemon serves
		// its certificate, reloaded on SIGHUP; without one (--tls-mode
		// disabled) the files are loaded at start.
		if cfg.Security.TLS == nil {
			cfg.GRPC.TLSCert, cfg.GRPC.TLSKey = sec.tlsCert, sec.tlsKey
		}
		o.sharedCert = sec.tlsCert
	}
	return nil
}

// describe is the startup line's note on the transport.
func (o *grpcOptions) describe(dataDir string) string {
	switch {
	case o.plaintext:
		return "plaintext"
	case o.tlsCert != "":
		return "TLS, certificate " + o.tlsCert
	case o.sharedCert != "":
		return "TLS, certificate " + o.sharedCert + " (--tls-cert)"
	}
	return "TLS, self-signed certificate " + filepath.Join(dataDir, grpcfront.CertFileName)
}
