package cluster

// Authentication and TLS of a cluster's processes (Options.Security): the
// flags every process gets, and how the cluster's own requests (the
// /readyz and /metrics probes, the controller queries) get through.

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/petrelmq/petrel/internal/auth/authwire"
	"github.com/petrelmq/petrel/internal/controller/client"
	"github.com/petrelmq/petrel/internal/netx"
	"github.com/petrelmq/petrel/internal/tlsx"
)

// Security says how the processes protect themselves. The zero value is
// neither authentication nor TLS: the processes' command lines are then
// exactly those without this option.
type Security struct {
	// AdminUser and AdminSecret, when AdminUser is set, start every
	// process (brokers, name servers and their controllers) with --auth
	// and this user as --auth-init-user-file: each master creates it as
	// its first (super) user, the name servers and controllers know it,
	// and the processes sign their own requests to each other with it.
	// The cluster signs its probes and controller queries with it too.
	AdminUser, AdminSecret string
	// TLS, when set, starts every process with --tls-mode enforcing and
	// this certificate; the cluster's probes and controller queries dial
	// TLS and verify the processes against TLS.CA.
	TLS *CertFiles
}

// Auth reports whether the processes run with --auth.
func (s Security) Auth() bool { return s.AdminUser != "" }

// initUserFile is the file, in Options.Dir, that holds the init user
// (NAME:SECRET, mode 0600): a file rather than --auth-init-user, so that
// the secret is in no command line (ps) and in no process log (each
// start logs its arguments).
const initUserFile = "auth-init-user"

// check refuses a Security that cannot be carried out.
func (s Security) check() error {
	if s.Auth() && (s.AdminSecret == "" || strings.ContainsAny(s.AdminUser, ":\n") || strings.Contains(s.AdminSecret, "\n")) {
		return fmt.Errorf("cluster: Security: the admin user needs a name without ':' and a secret, both on one line")
	}
	if s.TLS != nil && (s.TLS.Cert == "" || s.TLS.Key == "" || s.TLS.CA == "") {
		return fmt.Errorf("cluster: Security.TLS needs the CA, the certificate and the key")
	}
	return nil
}

// args are the flags s adds to every process's command line; dir is
// Options.Dir, where the init user's file is.
func (s Security) args(dir string) []string {
	var out []string
	if s.Auth() {
		out = append(out, "--auth", "--auth-init-user-file", filepath.Join(dir, initUserFile))
	}
	if s.TLS != nil {
		out = append(out, "--tls-mode", string(tlsx.Enforcing), "--tls-cert", s.TLS.Cert, "--tls-key", s.TLS.Key)
	}
	return out
}

// writeInitUser writes the init user's file into dir (with auth on).
func (s Security) writeInitUser(dir string) error {
	if !s.Auth() {
		return nil
	}
	p := filepath.Join(dir, initUserFile)
	if err := os.WriteFile(p, []byte(s.AdminUser+":"+s.AdminSecret+"\n"), 0o600); err != nil {
		return fmt.Errorf("cluster: write the init user: %w", err)
	}
	// WriteFile keeps the mode of a file that was there: make sure.
	if err := os.Chmod(p, 0o600); err != nil {
		return fmt.Errorf("cluster: write the init user: %w", err)
	}
	return nil
}

// clientTLS is the client side of s.TLS: the run's CA as the only root
// (nil without TLS).
func (s Security) clientTLS() (*tls.Config, error) {
	if s.TLS == nil {
		return nil, nil
	}
	pool, err := s.TLS.CertPool()
	if err != nil {
		return nil, err
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// httpScheme is the scheme of the processes' HTTP listeners.
func (s Security) httpScheme() string {
	if s.TLS != nil {
		return "https"
	}
	return "http"
}

// authorize adds the admin's HTTP Basic credentials to req (with auth on).
func (s Security) authorize(req *http.Request) {
	if s.Auth() {
		req.SetBasicAuth(s.AdminUser, s.AdminSecret)
	}
}

// controllerOptions are the controller client's options under s: TLS
// dialing and the admin's signature (the controller port takes requests
// of super users only).
func (s Security) controllerOptions(o client.Options) (client.Options, error) {
	cfg, err := s.clientTLS()
	if err != nil {
		return o, err
	}
	if cfg != nil {
		o.Network = tlsx.DialNetwork(netx.Or(o.Network), cfg)
	}
	if s.Auth() {
		o.Sign = authwire.Signer(s.AdminUser, s.AdminSecret)
	}
	return o, nil
}
