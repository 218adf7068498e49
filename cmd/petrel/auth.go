package main

// Authentication flags of petrel server, broker and namesrv (issue 18's
// flag contract): --auth, --auth-init-user NAME:SECRET,
// --auth-init-user-file. The YAML config takes the same names as keys.

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/petrelmq/petrel/internal/daemon"
)

// securityOptions are the --auth and --tls-* flags.
type securityOptions struct {
	auth         bool
	initUser     string // NAME:SECRET
	initUserFile string
	tlsMode      string
	tlsCert      string
	tlsKey       string
	tlsClientCA  string
}

func addAuthFlags(fl *pflag.FlagSet, s *securityOptions) {
	fl.BoolVar(&s.auth, "auth", false, "authenticate and authorize every request (RocketMQ ACL 2.0: users and policies, managed with petrel user and petrel acl) on the remoting ports, the gRPC endpoint and the HTTP listener (HTTP Basic; /healthz and /readyz stay open); off, anyone who can reach a port can send, read and delete")
	fl.StringVar(&s.initUser, "auth-init-user", "", "NAME:SECRET of the first super user, created on a master broker when it has no user yet; also the credentials this process signs its own requests with (registrations, forwards to the master, controller heartbeats), and a standalone name server's only user. The secret shows in the process list: prefer --auth-init-user-file")
	fl.StringVar(&s.initUserFile, "auth-init-user-file", "", "file holding NAME:SECRET for --auth-init-user (a trailing newline is fine); it must not be readable by group or others (chmod 600)")
}

// initCredentials reads --auth-init-user or --auth-init-user-file: ""
// for both without either.
func (s *securityOptions) initCredentials() (name, secret string, err error) {
	value, flag := s.initUser, "--auth-init-user"
	if s.initUserFile != "" {
		if s.initUser != "" {
			return "", "", errors.New("--auth-init-user and --auth-init-user-file exclude each other; give one")
		}
		fi, err := os.Stat(s.initUserFile)
		if err != nil {
			return "", "", fmt.Errorf("--auth-init-user-file: %w", err)
		}
		if !fi.Mode().IsRegular() {
			return "", "", fmt.Errorf("--auth-init-user-file %s is not a regular file; give a file holding NAME:SECRET", s.initUserFile)
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			return "", "", fmt.Errorf("--auth-init-user-file %s has mode %04o: group or others may read the secret; run chmod 600 %s", s.initUserFile, perm, s.initUserFile)
		}
		raw, err := os.ReadFile(s.initUserFile)
		if err != nil {
			return "", "", fmt.Errorf("--auth-init-user-file: %w", err)
		}
		value, flag = strings.TrimRight(string(raw), "\r\n"), "--auth-init-user-file "+s.initUserFile
	}
	if value == "" {
		return "", "", nil
	}
	name, secret, ok := strings.Cut(value, ":")
	if !ok || name == "" || secret == "" {
		return "", "", fmt.Errorf("%s: want NAME:SECRET (a user name, a colon, the secret), e.g. admin:a-long-random-secret", flag)
	}
	if strings.ContainsAny(name, " \t\r\n") || strings.ContainsAny(secret, "\r\n") {
		return "", "", fmt.Errorf("%s: the name may not hold white space nor the secret a line break; want NAME:SECRET on one line", flag)
	}
	return name, secret, nil
}

// security builds the daemon's Security from the flags: the Auth (with
// --auth), the init user's credentials and the TLS identity (tls.go).
func (s *securityOptions) security(logger *slog.Logger) (daemon.Security, error) {
	var sec daemon.Security
	name, secret, err := s.initCredentials()
	if err != nil {
		return sec, err
	}
	sec.AccessKey, sec.SecretKey = name, secret
	if s.auth {
		sec.Auth = daemon.NewAuth(daemon.AuthConfig{InitUser: name, InitSecret: secret, Logger: logger})
	}
	if sec.TLS, sec.TLSMode, err = s.tlsServer(); err != nil {
		return daemon.Security{}, err
	}
	return sec, nil
}

// logNameServerAuth is a standalone name server's startup line on
// authentication (a broker's is the daemon's).
func logNameServerAuth(logger *slog.Logger, sec daemon.Security) {
	if sec.Auth == nil {
		logger.Info("authentication is off: anyone who can reach the name server can register and unregister brokers and write its KV config; start with --auth --auth-init-user NAME:SECRET to require credentials")
		return
	}
	logger.Info("authentication is on", "users", sec.Auth.UserCount(), "init_user", sec.Auth.InitUser())
}

// describeAuth is the startup line's note on authentication.
func describeAuth(sec daemon.Security) string {
	if sec.Auth == nil {
		return "authentication off"
	}
	return fmt.Sprintf("authentication on (users: %d)", sec.Auth.UserCount())
}
