package main

// TLS flags of petrel server, broker, namesrv and controller (issue 18's
// flag contract): --tls-mode disabled|permissive|enforcing, --tls-cert,
// --tls-key, --tls-client-ca; SIGHUP reloads the certificate.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/petrelmq/petrel/internal/tlsx"
)

func addTLSFlags(fl *pflag.FlagSet, s *securityOptions) {
	fl.StringVar(&s.tlsMode, "tls-mode", string(tlsx.Disabled), "TLS of the remoting ports (name server, broker, replication), the HTTP listener and the controller port: disabled (plaintext), permissive (TLS and plaintext on the same port) or enforcing (TLS only; this process then also dials its links to other Petrel processes over TLS)")
	fl.StringVar(&s.tlsCert, "tls-cert", "", "PEM certificate (chain) of the TLS listeners, required unless --tls-mode is disabled; the gRPC endpoint uses it too unless --grpc-tls-cert is given. SIGHUP reloads it and --tls-key")
	fl.StringVar(&s.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	fl.StringVar(&s.tlsClientCA, "tls-client-ca", "", "PEM CA bundle for mutual TLS: TLS clients must present a certificate it signed, and this process verifies its peers (other brokers, name servers, controllers) against it; empty: clients are not asked for a certificate and links between Petrel processes are encrypted but not verified")
}

// parseTLSMode parses --tls-mode ("" is disabled).
func parseTLSMode(s string) (tlsx.Mode, error) {
	switch m := tlsx.Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case "", tlsx.Disabled:
		return tlsx.Disabled, nil
	case tlsx.Permissive, tlsx.Enforcing:
		return m, nil
	}
	return "", fmt.Errorf("--tls-mode %q: want disabled, permissive (TLS and plaintext on one port) or enforcing (TLS only)", s)
}

// tlsServer checks the TLS flags and loads the certificate: nil when
// --tls-mode is disabled.
func (s *securityOptions) tlsServer() (*tlsx.Server, tlsx.Mode, error) {
	mode, err := parseTLSMode(s.tlsMode)
	if err != nil {
		return nil, "", err
	}
	if (s.tlsCert == "") != (s.tlsKey == "") {
		return nil, "", errors.New("give both --tls-cert and --tls-key (the certificate and its private key), or neither")
	}
	if mode == tlsx.Disabled {
		if s.tlsClientCA != "" {
			return nil, "", errors.New("--tls-client-ca needs TLS: give --tls-mode permissive or enforcing, with --tls-cert and --tls-key")
		}
		return nil, mode, nil
	}
	if s.tlsCert == "" {
		return nil, "", fmt.Errorf("--tls-mode %s needs --tls-cert and --tls-key: the PEM certificate and private key the listeners present", mode)
	}
	srv, err := tlsx.NewServer(tlsx.Files{Cert: s.tlsCert, Key: s.tlsKey, ClientCA: s.tlsClientCA})
	if err != nil {
		return nil, "", err
	}
	return srv, mode, nil
}

// reloadTLS reads the certificate files of srv again and logs the
// outcome; on an error the old certificate stays in use.
func reloadTLS(srv *tlsx.Server, logger *slog.Logger) error {
	if err := srv.Reload(); err != nil {
		logger.Error("cannot reload the TLS certificate; the old one stays in use: fix the files and send SIGHUP again", "err", err)
		return err
	}
	logger.Info("reloaded the TLS certificate")
	return nil
}

// reloadOnSIGHUP reloads srv on every SIGHUP until ctx ends; without TLS
// (srv nil) SIGHUP keeps its default action.
func reloadOnSIGHUP(ctx context.Context, srv *tlsx.Server, logger *slog.Logger) {
	if srv == nil {
		return
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	go func() {
		defer signal.Stop(ch)
		for {
			select {
			case <-ctx.Done():
				return
			case <-ch:
				_ = reloadTLS(srv, logger)
			}
		}
	}()
}

// describeTLS is the startup line's note on TLS.
func (s *securityOptions) describeTLS(mode tlsx.Mode) string {
	switch {
	case mode == "" || mode == tlsx.Disabled:
		return "TLS disabled (plaintext remoting, HTTP and replication)"
	case s.tlsClientCA != "":
		return fmt.Sprintf("TLS %s, certificate %s, mutual TLS with clients signed by %s", mode, s.tlsCert, s.tlsClientCA)
	}
	return fmt.Sprintf("TLS %s, certificate %s", mode, s.tlsCert)
}
