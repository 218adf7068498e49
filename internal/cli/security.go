package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"

	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
	"github.com/petrelmq/petrel/internal/tlsx"
)

// The environment variables the credentials fall back to.
const (
	AccessKeyEnv = "PETREL_ACCESS_KEY"
	SecretKeyEnv = "PETREL_SECRET_KEY"
)

// credentialsHint is the hint of a request refused (NO_PERMISSION) when no
// credentials were given.
const credentialsHint = "the server requires credentials: pass --access-key and --secret-key (or set " + AccessKeyEnv + " / " + SecretKeyEnv + ")"

// ResolveCredentials picks the access key and secret of an operator
// command: each from its flag, else from its environment variable
// (getenv; an empty value counts as unset). Both or neither must result;
// one without the other is an ErrUsage error naming what is missing.
func ResolveCredentials(flagKey, flagSecret string, getenv func(string) string) (accessKey, secretKey string, err error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	accessKey, secretKey = flagKey, flagSecret
	if accessKey == "" {
		accessKey = getenv(AccessKeyEnv)
	}
	if secretKey == "" {
		secretKey = getenv(SecretKeyEnv)
	}
	switch {
	case accessKey != "" && secretKey == "":
		return "", "", fmt.Errorf("%w: an access key without a secret: pass --secret-key too (or set %s)", ErrUsage, SecretKeyEnv)
	case accessKey == "" && secretKey != "":
		return "", "", fmt.Errorf("%w: a secret key without an access key: pass --access-key too (or set %s)", ErrUsage, AccessKeyEnv)
	}
	return accessKey, secretKey, nil
}

// TLSConfig builds the client TLS config of --tls, --tls-ca and
// --tls-insecure: nil (plaintext) unless one of them is set (--tls-ca and
// --tls-insecure imply --tls). A CA file that cannot be read is an
// ErrUsage error.
func TLSConfig(on bool, caFile string, insecure bool) (*tls.Config, error) {
	if !on && caFile == "" && !insecure {
		return nil, nil
	}
	if caFile != "" && insecure {
		return nil, fmt.Errorf("%w: --tls-ca and --tls-insecure exclude each other: verify the server against the CA, or skip verification", ErrUsage)
	}
	cfg, err := tlsx.ClientConfig(tlsx.ClientOptions{CAFile: caFile, Insecure: insecure})
	if err != nil {
		return nil, fmt.Errorf("%w: --tls-ca: %w", ErrUsage, err)
	}
	return cfg, nil
}

// signed reports whether the CLI signs its requests.
func (c *CLI) signed() bool { return c.cfg.AccessKey != "" }

// refused is the ErrRefused error of an answer with a non-zero code. A
// NO_PERMISSION (16) answer adds what to do: pass credentials when none
// were given, else check the user's secret and policies.
func (c *CLI) refused(addr, what string, resp *remoting.Command) error {
	err := fmt.Errorf("%w: %s: %s answered code %d: %s", ErrRefused, what, addr, resp.Code, resp.Remark)
	if resp.Code != rmq.RespNoPermission {
		return err
	}
	if hint := c.permissionHint(resp.Remark); hint != "" {
		return fmt.Errorf("%w; %s", err, hint)
	}
	return err
}

// permissionHint says what to do about a NO_PERMISSION answer: pass
// credentials when none were given; nothing more when the server's remark
// is an authentication failure (it says already what to check); else look
// at the user's policies.
func (c *CLI) permissionHint(remark string) string {
	if !c.signed() {
		return credentialsHint
	}
	if strings.HasPrefix(remark, "authentication failed") {
		return ""
	}
	return fmt.Sprintf("check the policies of user %q with `petrel acl get --subject User:%s` (run as a super user)", c.cfg.AccessKey, c.cfg.AccessKey)
}

// transportHint says what to do about a failed dial or a connection
// closed without an answer when the cause may be a TLS mismatch: a
// handshake failure (a plaintext server, an untrusted certificate) with
// --tls, a connection closed at once without it (a server that enforces
// TLS). "" when nothing points at TLS.
func (c *CLI) transportHint(err error) string {
	return TransportHint(err, c.cfg.TLS != nil)
}

// TransportHint is the hint of transportHint for a client that dials TLS
// (withTLS) or plaintext.
func TransportHint(err error, withTLS bool) string {
	if err == nil {
		return ""
	}
	if withTLS {
		var unknown x509.UnknownAuthorityError
		var host x509.HostnameError
		var invalid x509.CertificateInvalidError
		var verify *tls.CertificateVerificationError
		var header tls.RecordHeaderError
		switch {
		case errors.As(err, &unknown), errors.As(err, &verify) && errors.As(verify.Err, &unknown):
			return "the server's certificate is not signed by a CA this client trusts: pass --tls-ca with the CA file that signed it, or --tls-insecure to skip verification (test servers only)"
		case errors.As(err, &host):
			return "the server's certificate does not name the address dialed: dial the name it was issued for, or pass --tls-insecure (test servers only)"
		case errors.As(err, &invalid), errors.As(err, &verify):
			return "the server's certificate was refused: check it, pass --tls-ca with its CA, or --tls-insecure (test servers only)"
		case errors.As(err, &header):
			return "the server did not answer in TLS: it runs without TLS (--tls-mode disabled); drop --tls, --tls-ca and --tls-insecure"
		case closedEarly(err):
			return "the TLS handshake failed: the server may run without TLS (--tls-mode disabled); drop --tls, --tls-ca and --tls-insecure, or check the server's --tls-mode"
		}
		return ""
	}
	if closedEarly(err) {
		return "the server closed the connection without an answer; if it runs with --tls-mode enforcing, dial TLS: pass --tls (with --tls-ca CA-FILE to verify its certificate, or --tls-insecure for a self-signed one)"
	}
	return ""
}

// closedEarly reports whether err is a connection the peer closed or
// reset: what a TLS mismatch looks like from the side that did not expect
// it.
func closedEarly(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return false // nothing listening, or unroutable: not TLS
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, remoting.ErrConnClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		strings.Contains(err.Error(), "connection reset by peer")
}
